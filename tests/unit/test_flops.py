"""FLOPs per op and per module (``profiler/flops.py``) equal what PyTorch's FlopCounterMode
counts for one iteration of the same model, in total and module by module."""

from __future__ import annotations

import importlib

import pytest
from torch.utils.flop_counter import FlopCounterMode

from skyline_nb.profiler.session import profile

pytestmark = pytest.mark.slow  # four real profiles


def providers_of(name: str) -> tuple:
    module = importlib.import_module(f"skyline_nb.examples.{name}")
    return (module.skyline_model_provider, module.skyline_input_provider,
            module.skyline_iteration_provider)


def flop_counter_counts(name: str, batch: int) -> tuple[int, dict[str, int]]:
    model_provider, input_provider, iteration_provider = providers_of(name)
    model = model_provider()
    step = iteration_provider(model)
    inputs = input_provider(batch)
    step(*inputs)
    with FlopCounterMode(display=False) as counter:
        step(*inputs)
    per_module = {key: sum(counts.values()) for key, counts in counter.get_flop_counts().items()}
    return counter.get_total_flops(), per_module


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm"])
def test_flops_equal_flop_counter_mode(name: str) -> None:
    report = profile(*providers_of(name), batch_size=8, device="cpu", predict=False)
    total, per_module = flop_counter_counts(name, 8)
    assert total > 0 and report.total_flops == pytest.approx(total, rel=0.01)
    root = report.tree
    assert root.forward_flops + root.backward_flops == report.total_flops
    checked = 0
    for node in root.walk():
        if node.kind != "module":
            continue
        key = f"{root.name}.{node.path}"
        if key in per_module:
            assert node.forward_flops + node.backward_flops == pytest.approx(
                per_module[key], rel=0.01), key
            checked += 1
    assert checked > 0

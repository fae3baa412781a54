"""FLOPs per op and per module (``profiler/flops.py``) equal what PyTorch's FlopCounterMode
counts for one iteration of the same model, in total and module by module; FLOPs go where the
op's time goes."""

from __future__ import annotations

import importlib

import pytest
import user_models
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


def test_a_double_backwards_flops_are_charged_where_its_time_is_not_to_untracked() -> None:
    """A gradient penalty (``create_graph``) runs backward nodes no forward op made; their time
    goes to an op of their node's name ("MmBackward0"), and so must their FLOPs: on the
    "untracked" node, which holds the time no op holds, 25.7 M FLOPs read as 41 GFLOP/s of
    nothing (session 33, a WGAN-GP)."""
    report = profile(*user_models.wgan_gradient_penalty(), batch_size=16, device="cpu",
                     predict=False)
    root = report.tree
    untracked = [n for n in root.children if n.kind == "untracked"]
    assert untracked and untracked[0].forward_flops + untracked[0].backward_flops == 0
    double = [n for n in root.children if n.kind == "op" and n.name == "MmBackward0"]
    assert double and double[0].backward_flops > 0 and double[0].backward_ms > 0
    assert root.forward_flops + root.backward_flops == report.total_flops


def test_flops_of_an_op_the_timing_run_lacks_go_to_its_last_op_of_that_name() -> None:
    """L-BFGS's line search calls the closure a varying number of times: the memory run ran
    one forward more than the timing run, and its 704,512 FLOPs went to the untracked node
    (an impossible value: no op's time does work there)."""
    from types import SimpleNamespace

    from skyline_nb.profiler.memory_run import by_op_of
    from skyline_nb.profiler.operations import OpRecord

    def run(count: int) -> SimpleNamespace:
        return SimpleNamespace(records=[OpRecord(i, "addmm", "0", "forward", key=f"addmm#{i}")
                                        for i in range(count)])

    memory, timing = run(3), run(2)
    assert by_op_of({0: 10, 1: 20, 2: 30, None: 5}, memory, timing) == {0: 10, 1: 50, None: 5}
    assert by_op_of({2: 30}, memory, run(0)) == {None: 30}

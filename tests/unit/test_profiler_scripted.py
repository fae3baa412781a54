"""A TorchScript model (``torch.jit.script`` or ``torch.jit.trace``), whole or one block of it:
profiled, its modules named by the classes the user wrote, and the report saying why the ops
inside a scripted module show under it (``profiler/compiled.py``).

Before, a scripted MLP's tree read ``RecursiveScriptModule`` at the root and for each module,
with every op directly under the root and nothing to say why.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from skyline_nb.examples.mlp import skyline_input_provider as input_provider
from skyline_nb.examples.mlp import skyline_iteration_provider as iteration_provider
from skyline_nb.profiler.compiled import scripted_warning
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values

# torch 2.13 deprecates TorchScript in favour of torch.compile; users' older code still runs it
pytestmark = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")


def mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def script(kind: str, module: nn.Module) -> nn.Module:
    if kind == "trace":
        return torch.jit.trace(module, torch.randn(4, 256))
    return torch.jit.script(module)


class Blocks(nn.Module):
    """An eager model one of whose blocks is TorchScript, as a library may ship it."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.block = script(kind, mlp())
        self.head = nn.Linear(10, 10)

    def forward(self, x):
        return self.head(self.block(x))


@pytest.mark.parametrize("kind", ["script", "trace"])
def test_a_scripted_model_keeps_its_class_names_and_says_where_its_ops_are(kind) -> None:
    report = profile(lambda: script(kind, mlp()), input_provider, iteration_provider,
                     batch_size=16, predict=False)
    names = {node.path: node.name for node in report.tree.walk() if node.kind.value != "op"}
    assert report.tree.name == "Sequential"
    assert (names["0"], names["1"], names["2"]) == ("Linear", "ReLU", "Linear")
    assert not [n for n in names.values() if "ScriptModule" in n or "Traced" in n]
    assert [w for w in report.warnings if w.startswith("the model is TorchScript")]
    # the model's ops sit under the root: no hook saw the modules inside it run
    assert {"t", "addmm", "relu"} <= {n.name for n in report.tree.children}
    weights = {n.path: n.weight_bytes for n in report.tree.children if n.path in ("0", "2")}
    assert weights == {"0": 4 * (256 * 128 + 128), "2": 4 * (128 * 10 + 10)}
    assert impossible_values(report) == []


@pytest.mark.parametrize("kind", ["script", "trace"])
def test_a_scripted_block_holds_its_ops_and_is_named(kind) -> None:
    report = profile(lambda: Blocks(kind), input_provider, iteration_provider, batch_size=16,
                     predict=False)
    block = report.tree.find("block")
    assert block is not None and block.name == "Sequential"
    assert block.forward_ms > 0
    assert any(n.name.startswith("addmm") for n in block.walk() if n is not block)
    assert [w for w in report.warnings if w.startswith("the module 'block' is TorchScript")]
    assert impossible_values(report) == []


def test_models_without_scripted_parents_get_no_such_warning() -> None:
    assert scripted_warning(mlp()) is None
    assert scripted_warning(nn.Sequential(torch.jit.script(nn.ReLU()))) is None  # holds none
    two = nn.ModuleDict({"a": torch.jit.script(mlp()), "b": torch.jit.script(mlp())})
    assert (scripted_warning(two) or "").startswith("the modules 'a', 'b' are TorchScript")

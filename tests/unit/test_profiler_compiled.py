"""A step compiled with ``torch.compile`` (the model or the step function): profiled, with the
report saying that the breakdown is of its ops run one at a time (``profiler/compiled.py``).

Backends that need no C compiler (``eager``, ``aot_eager``) compile Dynamo graphs as Inductor
does, and the instrumented iterations run them op by op just the same. Warnings are errors in
this suite, so these tests also prove that the warning a compiled module gives at each call
under the profiler's global module hooks does not reach the user.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from skyline_nb.profiler.compiled import COMPILED
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values


def providers(where: str | None):
    def model_provider():
        model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))
        return torch.compile(model, backend="eager") if where == "model" else model

    def input_provider(batch_size=16):
        return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))

    def iteration_provider(model):
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        forward = torch.compile(model, backend="aot_eager") if where == "step" else model

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(forward(x), y)
            loss.backward()
            opt.step()

        return step

    return model_provider, input_provider, iteration_provider


@pytest.mark.parametrize("where", ["model", "step"])
def test_a_compiled_step_is_profiled_and_the_report_says_what_its_breakdown_is(where) -> None:
    torch._dynamo.reset()
    report = profile(*providers(where), batch_size=16)
    assert COMPILED in report.warnings
    assert impossible_values(report) == []
    ops = {node.name for node in report.tree.walk()}
    assert any(name.startswith("addmm") for name in ops)  # the ops, one at a time


def test_an_uncompiled_step_after_compiled_ones_gets_no_such_warning() -> None:
    profile(*providers("step"), batch_size=16)  # Dynamo is loaded and has counted graphs
    report = profile(*providers(None), batch_size=16)
    assert COMPILED not in report.warnings


class Encoder(nn.Module):
    """A model one of whose blocks the user compiled (the first: on a non-leaf input,
    Dynamo reads ``.grad`` and warns, which this suite turns into an error, plain loop or not)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = torch.compile(nn.Sequential(nn.Linear(64, 128), nn.GELU()),
                                   backend="eager")
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.block(x))


@pytest.mark.parametrize("compiled", ["model", "block"])
def test_compiled_modules_keep_the_names_the_user_wrote(compiled) -> None:
    """``torch.compile`` wraps a module in an ``OptimizedModule`` that holds it as
    ``_orig_mod``: the tree showed that wrapper as the root (or as an extra level) and every
    path and weight name began with ``_orig_mod.``."""
    torch._dynamo.reset()
    model_provider, input_provider, iteration_provider = providers("model")
    if compiled == "block":
        model_provider = Encoder
    report = profile(model_provider, input_provider, iteration_provider, batch_size=16)
    paths = [node.path for node in report.tree.walk()]
    assert not [p for p in paths + [w.name for w in report.weights] if "_orig_mod" in p]
    assert "OptimizedModule" not in {node.name for node in report.tree.walk()}
    if compiled == "model":
        assert report.tree.name == "Sequential"
        assert [w.name for w in report.weights] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    else:
        assert report.tree.name == "Encoder"
        assert paths.count("block") == 1 and "block.0" in paths
        assert sum(n.weight_bytes for n in report.tree.children) == 4 * (64 * 128 + 128 + 1290)
    assert impossible_values(report) == []

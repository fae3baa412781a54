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

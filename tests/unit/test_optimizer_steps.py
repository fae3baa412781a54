"""Which ops inside an optimizer's step are its update (``profiler/optimizer_steps.py``); the
profiles of steps that call a closure are in ``test_profiler_unusual_tensors.py``."""

from __future__ import annotations

import torch

from skyline_nb.profiler.optimizer_steps import OptimizerSteps

PARAM = torch.nn.Parameter(torch.ones(3))
DATA = torch.ones(3)


def test_outside_a_step_nothing_is_the_update() -> None:
    steps = OptimizerSteps()
    assert not steps.runs_update((PARAM,)) and not steps.runs_update(())


def test_in_a_step_the_update_runs_without_grad_and_a_closures_forward_with_it() -> None:
    steps = OptimizerSteps()
    steps.enter(torch.optim.SGD([PARAM], lr=0.1))
    with torch.no_grad():  # torch.optim's update
        assert steps.runs_update((PARAM, DATA))
    assert not steps.runs_update(((PARAM, DATA), {}))  # a closure's forward: grad on, a param
    assert steps.runs_update((DATA, {"alpha": 2}))  # nothing that joins autograd
    steps.leave()
    assert steps.depth == 0 and not steps.runs_update((DATA,))


def test_a_differentiable_optimizers_update_runs_with_grad_and_stays_the_update() -> None:
    steps = OptimizerSteps()
    steps.enter(torch.optim.SGD([PARAM], lr=0.1))
    steps.enter(torch.optim.SGD([PARAM], lr=0.1, differentiable=True))  # nested in the first
    assert steps.runs_update((PARAM,))
    steps.leave()
    assert not steps.runs_update((PARAM,)) and steps.depth == 1
    steps.leave()
    steps.leave()  # one more than entered: stays at none
    assert steps.depth == 0

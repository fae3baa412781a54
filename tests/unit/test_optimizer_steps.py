"""Which ops inside an optimizer's step are its update, and which outside any step are an update
written by hand (``profiler/optimizer_steps.py``); the profiles of steps that call a closure or
update by hand are in ``test_profiler_unusual_tensors.py``."""

from __future__ import annotations

import torch

from skyline_nb.profiler.optimizer_steps import OptimizerSteps

PARAM = torch.nn.Parameter(torch.ones(3))
DATA = torch.ones(3)


def test_outside_a_step_nothing_is_the_update_without_parameters_to_work_on() -> None:
    steps = OptimizerSteps()
    with torch.no_grad():
        assert not steps.runs_update((PARAM,)) and not steps.runs_update(())


def _trained() -> torch.nn.Linear:
    layer = torch.nn.Linear(4, 3)
    layer(torch.ones(2, 4)).sum().backward()
    return layer


def test_an_update_by_hand_is_what_works_on_parameters_and_gradients_without_autograd() -> None:
    layer = _trained()
    steps = OptimizerSteps(layer.parameters())
    weight, grad = layer.weight, layer.weight.grad
    with torch.no_grad():
        step = grad * 0.1  # p -= lr * p.grad, as the tutorials write it
        assert steps.runs_update((grad, 0.1), step)
        scaled = step / 2.0  # on what the update made
        assert steps.runs_update((step, 2.0), scaled)
        assert steps.runs_update((weight, scaled), weight)
        assert not steps.runs_update((torch.ones(3), 2.0), torch.ones(3))  # a metric's op
        assert not steps.runs_update((weight, DATA), None, in_module=True)  # an evaluation
    # grad on: the pre-2018 style, through .data, which requires no grad
    assert steps.runs_update((weight.data, grad.data), weight.data)
    assert not steps.runs_update((weight, DATA), None)  # a forward (a penalty on the weights)


def test_the_gradients_are_read_again_once_an_update_is_over() -> None:
    layer = _trained()
    steps = OptimizerSteps(layer.parameters())
    with torch.no_grad():
        assert not steps.runs_update((torch.ones(3),), None)
    layer.zero_grad(set_to_none=True)
    layer(torch.ones(2, 4)).sum().backward()  # new gradient tensors
    assert not steps.runs_update((layer.weight, DATA), None)  # a forward ends the update
    with torch.no_grad():
        assert steps.runs_update((layer.bias.grad,), None)


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

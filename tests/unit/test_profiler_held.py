"""Modules and tensors a step keeps besides the model (an EMA of the weights, a frozen teacher,
a learned prompt): their bytes are in the peak and "other" says whose they are
(``profiler/held.py``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from skyline_nb.profiler.held import held_by_step
from skyline_nb.profiler.providers import Trial
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values


def model_provider():
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))


def input_provider(batch_size=16):
    return (torch.randn(batch_size, 64),)


def ema_iteration_provider(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))

    def step(x):
        opt.zero_grad()
        (model(x) - x).pow(2).mean().backward()
        opt.step()
        ema.update_parameters(model)

    return step


class Distiller:
    """A trainer whose step method distils a frozen teacher into the model."""

    def __init__(self, model):
        self.model, self.teacher = model, nn.Linear(64, 64).requires_grad_(False)
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(self, x):
        self.opt.zero_grad()
        (self.model(x) - self.teacher(x)).pow(2).mean().backward()
        self.opt.step()

    __call__ = step  # the trainer itself can be the step


def test_an_ema_of_the_weights_is_named_in_other() -> None:
    report = profile(model_provider, input_provider, ema_iteration_provider, batch_size=16)
    weights = sum(p.numel() * 4 for p in model_provider().parameters())
    assert report.categories["untracked"] >= weights  # the EMA copy, as in the user's loop
    (said,) = [w for w in report.warnings if "modules the step keeps" in w]
    assert "AveragedModel 'ema'" in said
    assert impossible_values(report) == []


def test_a_teacher_on_the_trainer_is_named_and_the_model_is_not() -> None:
    report = profile(model_provider, input_provider, lambda m: Distiller(m).step, batch_size=16)
    assert any("Linear 'teacher'" in w for w in report.warnings)
    model = model_provider()
    trainer = Distiller(model)
    teacher = [("teacher", (64 * 64 + 64) * 4)]
    held = held_by_step(Trial(model, trainer.step, (), {}, [], "test", trainer.step))
    assert [(name, size) for name, _, size in held] == teacher
    held = held_by_step(Trial(model, trainer, (), {}, [], "test", trainer))
    assert [(name, size) for name, _, size in held] == teacher


def test_a_plain_step_or_a_compiled_wrapper_keeps_nothing_besides_the_model() -> None:
    model = model_provider()
    loss_fn = nn.MSELoss()
    wrapper = torch.compile(model, backend="eager")

    def step(x):
        loss_fn(wrapper(x), x).backward()
        return model

    assert held_by_step(Trial(model, step, (), {}, [], "test", step)) == []


def test_a_parameter_outside_the_model_is_named_in_other() -> None:
    """A learned prompt prepended to the inputs, trained by the step's optimizer beside the
    model: 50 KiB of "other" with no word why."""
    table = torch.randn(512, 512)  # made before the profile: in no number of the step's

    def prompted(model):
        prompt = nn.Parameter(torch.zeros(200, 64))
        opt = torch.optim.Adam([*model.parameters(), prompt])

        def step(x):
            opt.zero_grad()
            out = model(torch.cat([prompt, x])) + table[0, :64]
            out.pow(2).mean().backward()
            opt.step()
        return step

    report = profile(model_provider, input_provider, prompted, batch_size=16, predict=False)
    (said,) = [w for w in report.warnings if "the step keeps" in w]
    assert "tensors the step keeps" in said and "Parameter 'prompt' (50 KiB)" in said
    assert "table" not in said
    assert impossible_values(report) == []

"""A step that keeps tensors of every iteration (``profiler/retained.py``): its memory grows
at every step of the user's loop while one iteration's peak looks fine, so the profile says so;
steps that keep one iteration's worth, or nothing, or make cyclic garbage, are left alone."""

from __future__ import annotations

import pytest
import torch
from test_level1_cuda_window import Ledger, ScriptedCuda
from torch import nn

from skyline_nb.profiler import iteration
from skyline_nb.profiler.providers import Trial
from skyline_nb.profiler.retained import MIN_BYTES, kept_per_step, kept_warning
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values

KEPT = "more alive than the one before"
LAST: dict[str, torch.Tensor] = {}
NUMBERS: list[float] = []


def model_provider():
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))


def input_provider(batch_size=16):
    return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))


def provider(keep):
    """An iteration provider whose step hands its loss and outputs to ``keep``."""

    def iteration_provider(model):
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step(x, y):
            opt.zero_grad()
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
            keep(loss, out)
            return loss

        return step

    return iteration_provider


class Cycle:
    """An object in a reference cycle holding a tensor: garbage only the collector frees."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor, self.me = tensor, self


def test_outputs_appended_to_a_list_are_named_with_their_bytes_per_iteration() -> None:
    kept: list[torch.Tensor] = []
    report = profile(model_provider, input_provider,
                     provider(lambda loss, out: kept.append(out.detach())), batch_size=64)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "keeps 2.50 KiB more" in said  # 64 × 10 floats
    assert "the list 'kept' (kept by the step) grows by 1 item" in said
    assert impossible_values(report) == []
    kept.clear()  # at batch 16 (640 B) under MIN_BYTES: 6 MiB after 10,000 iterations
    report = profile(model_provider, input_provider,
                     provider(lambda loss, out: kept.append(out.detach())), batch_size=16)
    assert not [w for w in report.warnings if KEPT in w]


def test_a_forward_hook_that_stores_activations_is_named() -> None:
    stored: list[torch.Tensor] = []

    def hooked():
        model = model_provider()
        model[1].register_forward_hook(lambda module, args, out: stored.append(out))
        return model

    report = profile(hooked, input_provider, provider(lambda loss, out: None), batch_size=16)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "keeps 16 KiB more" in said  # 16 × 256 floats of the ReLU's output every iteration
    assert "the list 'stored' (kept by a forward hook on '1') grows by 1 item" in said


@pytest.mark.parametrize("keep", [
    lambda loss, out: None,
    lambda loss, out: LAST.update(out=out),  # the last one only
    lambda loss, out: Cycle(out.detach().clone()),  # cyclic garbage, every iteration
    lambda loss, out: NUMBERS.append(loss.item()),
], ids=["nothing", "the last output", "cyclic garbage", "numbers"])
def test_steps_that_keep_no_more_each_iteration_are_not_named(keep) -> None:
    report = profile(model_provider, input_provider, provider(keep), batch_size=16)
    assert not [w for w in report.warnings if KEPT in w], report.warnings


def test_a_leak_is_read_exactly_on_a_cuda_allocator_too() -> None:
    """CUDA reads the allocator's counter between warm-up iterations (scripted here)."""
    ledger = Ledger()
    device = ScriptedCuda(torch.device("cpu"), ledger=ledger)
    leaked: list[torch.Tensor] = []

    def build() -> Trial:
        def step():
            leaked.append(ledger.track(torch.zeros(3000)))  # 12,000 B an iteration

        return Trial(torch.nn.Linear(4, 4), step, (), {}, [], "test")

    result, _ = iteration.measure_level1(build, device, 16)
    assert result.kept_per_step == 12_000


def test_kept_per_step_needs_two_alike_increases_above_the_threshold() -> None:
    peak = 10_000_000
    assert kept_per_step([0, 50_000, 100_000], peak) == 50_000
    assert kept_per_step([0, 50_000, 90_000], peak) == 45_000  # within 25 %
    assert kept_per_step([0, 80_000, 100_000], peak) == 0  # a cache filled once
    assert kept_per_step([0, 0, 50_000], peak) == 0
    assert kept_per_step([0, 9_000, 18_000], peak) == 0  # under 0.1 % of the peak
    assert kept_per_step([0, MIN_BYTES - 1, 2 * MIN_BYTES - 2], 1000) == 0
    assert kept_per_step([0, 50_000], peak) == 0  # one increase says nothing
    assert kept_warning(0, peak) is None
    assert "after 200 more it is twice as high" in kept_warning(50_000, peak)


def test_a_step_that_steps_adam_every_second_call_is_not_said_to_grow() -> None:
    """Gradients accumulated over two calls, Adam stepping at the second: the bytes alive after
    three calls rose by the gradients' twice (Adam's state is twice them), then alternate; the
    profile said memory grows at every step. Where the step's two batches peaked differently
    and nothing is seen growing, it now says it cannot tell; each warning is said once (every
    op timing run added "the steps ran different ops")."""
    def alternating(model):
        opt, calls = torch.optim.Adam(model.parameters()), [0]

        def step(x, y):
            nn.functional.cross_entropy(model(x), y).backward()
            calls[0] += 1
            if calls[0] % 2 == 0:
                opt.step()
                opt.zero_grad()
        return step

    report = profile(model_provider, input_provider, alternating, device="cpu", predict=False)
    assert impossible_values(report) == []
    assert not any(KEPT in w for w in report.warnings)
    assert any("whether its memory keeps growing is not known" in w for w in report.warnings)
    assert any("two batches of 16 peaked at" in w for w in report.warnings)
    assert len(set(report.warnings)) == len(report.warnings)


PREDICTIONS: list[torch.Tensor] = []


def global_list_provider(model):
    """A notebook's step: a global list the step appends each iteration's outputs to."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        nn.functional.cross_entropy(out, y).backward()
        opt.step()
        PREDICTIONS.append(out.detach())

    return step


def test_a_global_list_the_step_appends_to_is_named() -> None:
    report = profile(model_provider, input_provider, global_list_provider, batch_size=64)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "the list 'PREDICTIONS' (kept by the step) grows by 1 item" in said
    PREDICTIONS.clear()


def test_growing_names_what_grew_alike_twice_with_a_tensor_in_it() -> None:
    from collections import deque

    from skyline_nb.profiler.retained import growing

    tensor = torch.zeros(1)

    def snapshot(**lengths):
        values = {"cache": {i: tensor for i in range(lengths["cache"])},
                  "numbers": [0.5] * lengths["numbers"],
                  "pairs": deque([(tensor, tensor)] * lengths["pairs"])}
        return {i: (name, values[name], lengths[name]) for i, name in enumerate(values)}

    assert growing([snapshot(cache=1, numbers=1, pairs=2), snapshot(cache=5, numbers=2, pairs=4),
                    snapshot(cache=5, numbers=3, pairs=6)]) == ["pairs grows by 2 items"]
    assert growing([snapshot(cache=1, numbers=1, pairs=2)] * 2) == []


class Recording(nn.Module):
    """A model that keeps its hidden activations for plotting, as notebooks do."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Sequential(nn.Linear(64, 256), nn.ReLU()), nn.Linear(256, 10)
        self.activations: list[torch.Tensor] = []

    def forward(self, x):
        hidden = self.body(x)
        self.activations.append(hidden.detach())
        return self.head(hidden)


def test_a_module_attribute_that_collects_activations_is_named() -> None:
    report = profile(Recording, input_provider, provider(lambda loss, out: None), batch_size=16)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "keeps 16 KiB more" in said
    assert "the list 'activations' (an attribute of the model) grows by 1 item" in said


def test_a_list_inside_a_history_dict_is_named() -> None:
    """``history["preds"].append(...)``: the dict keeps its one key, the list under it grows."""
    from collections import defaultdict

    history: defaultdict[str, list[torch.Tensor]] = defaultdict(list)
    history["loss"].append(torch.zeros(()))  # a key made before, whose list stays
    report = profile(model_provider, input_provider,
                     provider(lambda loss, out: history["preds"].append(out.detach())),
                     batch_size=64)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert ("the list under 'preds' in the defaultdict 'history' (kept by the step) grows by "
            "1 item") in said, said


def test_a_global_module_hook_that_stores_outputs_is_named() -> None:
    stored: list[torch.Tensor] = []
    handle = nn.modules.module.register_module_forward_hook(
        lambda module, args, out: stored.append(out) if isinstance(module, nn.ReLU) else None)
    try:
        report = profile(model_provider, input_provider, provider(lambda loss, out: None),
                         batch_size=16)
    finally:
        handle.remove()
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "keeps 16 KiB more" in said
    assert "the list 'stored' (kept by a global forward hook) grows by 1 item" in said, said


class Trainer:
    """A training loop written as a class: the iteration provider returns its bound method."""

    def __init__(self, model: nn.Module) -> None:
        self.model, self.opt = model, torch.optim.SGD(model.parameters(), lr=0.01)
        self.outputs: list[torch.Tensor] = []

    def step(self, x, y):
        self.opt.zero_grad()
        out = self.model(x)
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        self.opt.step()
        self.outputs.append(out.detach())
        return loss


class MetricsLogger:
    def __init__(self) -> None:
        self.predictions: list[torch.Tensor] = []

    def add(self, out: torch.Tensor) -> None:
        self.predictions.append(out.detach())


LOGGER = MetricsLogger()


@pytest.mark.parametrize(("iteration_provider", "named"), [
    (lambda model: Trainer(model).step, "the list 'outputs' (kept by the step)"),
    (provider(lambda loss, out: LOGGER.add(out)),
     "the list 'LOGGER.predictions' (kept by the step)"),
], ids=["a bound method's object", "an object the step calls"])
def test_a_list_kept_in_an_object_is_named(iteration_provider, named) -> None:
    report = profile(model_provider, input_provider, iteration_provider, batch_size=64)
    LOGGER.predictions.clear()
    (said,) = [w for w in report.warnings if KEPT in w]
    assert f"{named} grows by 1 item" in said, said


ALL_OUTPUTS = torch.zeros(0, 10)
LAST_OUTPUT = torch.zeros(0, 10)


def concatenating(loss, out):
    """An evaluation habit in a training step: every iteration's outputs concatenated."""
    global ALL_OUTPUTS
    ALL_OUTPUTS = torch.cat([ALL_OUTPUTS, out.detach()])


def replacing(loss, out):
    global LAST_OUTPUT
    LAST_OUTPUT = out.detach()


def test_a_tensor_concatenated_at_every_step_is_named_one_replaced_is_not() -> None:
    global ALL_OUTPUTS, LAST_OUTPUT
    report = profile(model_provider, input_provider, provider(concatenating), batch_size=64)
    ALL_OUTPUTS = torch.zeros(0, 10)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "keeps 2.50 KiB more" in said, said
    assert "the tensor 'ALL_OUTPUTS' (kept by the step) grows by 640 elements" in said, said
    # looked at after every warm-up step, a replaced tensor must not be held (nor named)
    report = profile(model_provider, input_provider, provider(replacing), batch_size=64)
    LAST_OUTPUT = torch.zeros(0, 10)
    assert not [w for w in report.warnings if KEPT in w], report.warnings


class Unreadable:
    """An object whose attributes cannot be read (a proxy to something gone)."""

    @property
    def __dict__(self):
        raise RuntimeError("the proxied object is gone")


UNREADABLE = Unreadable()


class Log(list):
    """A list that refuses indexing (a user's own container class)."""

    def __getitem__(self, index):
        raise RuntimeError("read through the iterator only")


def keep_beside_an_unreadable_object():
    kept: list[torch.Tensor] = []

    def keep(loss, out):
        assert UNREADABLE is not None
        kept.append(out.detach())

    return keep


def keep_in_a_log():
    kept = Log()
    return lambda loss, out: kept.append(out.detach())


@pytest.mark.parametrize("keeper", [keep_beside_an_unreadable_object, keep_in_a_log],
                         ids=["an unreadable object", "an unindexable list"])
def test_an_object_that_fails_to_be_read_names_nothing_and_the_bytes_are_still_reported(
        keeper) -> None:
    report = profile(model_provider, input_provider, provider(keeper()), batch_size=64)
    (said,) = [w for w in report.warnings if KEPT in w]
    assert "keeps 2.50 KiB more" in said and "e.g. outputs appended to a list" in said, said

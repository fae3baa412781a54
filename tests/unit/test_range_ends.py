"""The top of the drag range, tried on the inputs alone (``range_ends.try_the_top``): a real
warm trial of the tiny MLP of ``test_profiler_errors``, whose input provider here slices a
dataset of ``ROWS`` rows, with the curves given (exact arithmetic: the samples 2, 4 and 8 on a
line), so that where the drag may go is the test's own and only what the inputs say moves it."""

from __future__ import annotations

import time

import pytest
import torch
from test_profiler_errors import iteration_provider, model_provider

from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler.iteration import WarmTrial, measure_level1
from skyline_nb.profiler.prepare import prepare
from skyline_nb.profiler.providers import InputsAtAnySize
from skyline_nb.profiler.range_ends import try_the_top
from skyline_nb.profiler.samples import Sampled
from skyline_nb.profiler.sampling import Refusal
from skyline_nb.profiler.session import build_trial

ROWS = 20
X, Y = torch.randn(ROWS, 8), torch.randint(0, 2, (ROWS,))
SIZES = [2, 4, 8]


def sliced(batch_size=4):  # a newcomer's provider over a small dataset: 20 rows at most
    return X[:batch_size], Y[:batch_size]


def warm_trial(inputs=sliced) -> WarmTrial:
    run = prepare(model_provider, inputs, iteration_provider, batch_size=4, device="cpu",
                  project_root=None, memory_budget=None, cells=None)
    inputs_for = InputsAtAnySize(run.providers, 4, run.device)
    _, warm = measure_level1(lambda: build_trial(run.providers, 4, run.device), run.device, 4,
                             inputs_for=inputs_for)
    for n in SIZES:  # as the samples made them
        inputs_for(n)
    return warm


def sampled(refused: list[Refusal] | None = None) -> Sampled:
    return Sampled({n: 1000 * n for n in SIZES}, {}, [], None, 0.06, {}, refused or [])


def models(**bounds: int) -> PerformanceModels:
    return PerformanceModels.from_samples(SIZES, [1.0 + 0.25 * n for n in SIZES],
                                          [1000 * n + 5000 for n in SIZES], 1 << 30,
                                          memory_bound=False, **bounds)


def test_the_inputs_at_the_top_narrowed_down_to_the_datasets_rows() -> None:
    found, curves = sampled(), models()
    assert curves.can_manipulate and curves.max_batch_size() == 64
    assert try_the_top(warm_trial(), found, curves)
    [refusal] = found.refused
    # 21 rows asked, 20 given: within the one element a provider's rounding may take
    # (``batch_size // 2`` pairs), so 21 runs as far as the inputs can tell; 22 is refused
    assert refusal.batch_size == ROWS + 2
    assert refusal.why.endswith("returned tensors none of whose sizes follows the batch size: "
                                "(20, 8), (20,), where batch size 4 gave (4, 8), (4,)")


def test_a_refusal_above_the_samples_is_narrowed_and_replaced() -> None:
    found = sampled([Refusal(32, "the input provider raised ValueError: 32 rows")])
    assert try_the_top(warm_trial(), found, models(fails_at=32))
    assert [r.batch_size for r in found.refused] == [ROWS + 2]


def test_inputs_that_follow_at_the_top_say_nothing() -> None:
    def fresh(batch_size=4):
        return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))

    found = sampled()
    assert not try_the_top(warm_trial(fresh), found, models())
    assert found.refused == []


def test_an_expensive_input_provider_is_not_asked() -> None:
    """Inputs that take 30 ms more per call than the 5 ms the check may spend: never made at
    sizes the samples did not make."""
    asked: list[int] = []

    def slow(batch_size=4):
        asked.append(batch_size)
        time.sleep(0.03)
        return sliced(batch_size)

    warm = warm_trial(slow)
    asked.clear()
    found = sampled()
    assert not try_the_top(warm, found, models())
    assert asked == [] and found.refused == []


@pytest.mark.parametrize("curves", [models(fails_below=1), models()])
def test_no_drag_and_no_refusal_tries_nothing(curves: PerformanceModels) -> None:
    curves.can_manipulate = False
    found = sampled()
    assert not try_the_top(warm_trial(), found, curves)
    assert found.refused == []

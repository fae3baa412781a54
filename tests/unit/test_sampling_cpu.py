"""Sampling with the real CPU measurement: exact memory lines and the CPU-budget back-off."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # real iterations: about 10 s on a busy 2-core machine

import contextlib  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

from scripted_blocks import script_blocks  # noqa: E402

from skyline_nb.examples import mlp  # noqa: E402
from skyline_nb.models.linear import PerformanceModels  # noqa: E402
from skyline_nb.profiler import iteration  # noqa: E402
from skyline_nb.profiler.device import resolve_device  # noqa: E402
from skyline_nb.profiler.iteration import measure_iteration  # noqa: E402
from skyline_nb.profiler.providers import Trial  # noqa: E402
from skyline_nb.profiler.sampling import collect_samples  # noqa: E402
from skyline_nb.report import Sample  # noqa: E402

PROVIDERS = (mlp.skyline_model_provider, mlp.skyline_input_provider,
             mlp.skyline_iteration_provider)


def measurer(budget: int | None):
    device = resolve_device("cpu", budget)
    return device, lambda batch: measure_iteration(*PROVIDERS, batch, device)


def test_samples_fit_an_exact_memory_line_and_invert() -> None:
    device, measure = measurer(None)
    first = measure(8)
    samples, reason = collect_samples(measure, first, device.capacity_bytes(),
                                      oom_errors=device.oom_types, max_points=3)
    assert reason is None and [s.batch_size for s in samples] == [8, 16, 32]
    models = PerformanceModels.from_samples(
        [s.batch_size for s in samples], [s.iteration_ms for s in samples],
        [s.peak_bytes for s in samples], device.capacity_bytes(),
    )
    assert models.memory.slope > 0 and models.memory.r2 == pytest.approx(1.0)
    for batch in (8, 16, 32):
        assert models.batch_size_for_memory(models.predict_peak_bytes(batch)) == batch


def test_cpu_budget_exceeded_backs_off() -> None:
    _, unlimited = measurer(None)
    first, at_16 = unlimited(8), unlimited(16)
    # The budget lets 16 through but not 32; the capacity passed to the sampler is generous,
    # so 32 is tried and the CPU tracker's CPUOutOfMemoryError is what stops it.
    budget = at_16.peak_bytes + (at_16.peak_bytes - first.peak_bytes) // 2
    device, measure = measurer(budget)
    samples, reason = collect_samples(measure, first, 10 * budget,
                                      oom_errors=device.oom_types, max_points=3)
    sizes = [s.batch_size for s in samples]
    assert reason is None and 32 not in sizes and 16 in sizes
    assert all(s.peak_bytes <= budget for s in samples)


def _count_steps() -> tuple[Callable[[], Trial], list[int]]:
    steps = [0]

    def step() -> None:
        steps[0] += 1

    def build() -> Trial:
        return Trial(torch.nn.Linear(2, 2), step, (), {}, [], "test")

    return build, steps


def test_extra_samples_are_measured_leaner_than_the_headline(monkeypatch) -> None:
    """A 40 ms iteration: the headline times one more iteration (a last warm-up) than an extra
    sample, whose first timed iteration already counts; both settle on 40 ms. (A sample's
    second warm-up is timed too, but below 50 ms it does not settle anything.)"""
    blocks = script_blocks(monkeypatch, [(40.0, 0.0)])
    build, steps = _count_steps()
    device = resolve_device("cpu")
    headline = iteration.measure_level1(build, device, 8)
    headline_steps, headline_blocks = steps[0], list(blocks)
    steps[0], blocks[:] = 0, []
    results = []

    def measure(batch: int) -> Sample:
        results.append(iteration.measure_level1(build, device, batch))
        return results[-1].sample()

    collect_samples(measure, headline.sample(), 0)
    assert headline.converged and headline.iteration_ms == 40.0
    assert headline_blocks == [1, 1, 1] and headline_steps == 2 + 3  # tracked warm-up + timed
    assert [r.batch_size for r in results] == [16, 32]
    assert all(r.converged and r.iteration_ms == 40.0 for r in results)
    assert blocks == [1, 1, 1] * 2 and steps[0] == (2 + 2) * 2  # timed warm-up, 2 blocks
    assert iteration.measure_level1(build, device, 8, precision=iteration.SAMPLE).converged


def test_a_short_first_iteration_is_not_a_sample_block(monkeypatch) -> None:
    """At 2 ms an iteration is shorter than a sample's 10 ms block: the lone first one stays a
    warm-up, and blocks of 5 iterations follow (13 for the headline's 25 ms blocks). The
    sample's timed second warm-up is the leading 1."""
    blocks = script_blocks(monkeypatch, [(2.0, 0.0)])
    build, _ = _count_steps()
    result = iteration.measure_level1(build, resolve_device("cpu"), 8,
                                      precision=iteration.SAMPLE)
    assert blocks == [1, 1, 5, 5] and result.block_means == [2.0, 2.0]
    blocks[:] = []
    iteration.measure_level1(build, resolve_device("cpu"), 8)
    assert blocks == [1, 13, 13]


def test_one_long_iteration_settles_a_sample_alone(monkeypatch) -> None:
    """At 60 ms one timed iteration is longer than two blocks: a sample's second warm-up is
    timed (allocator events only, no tracker) and settles it, 2 steps in all; the headline
    tracks 2 and times 3 more."""
    blocks = script_blocks(monkeypatch, [(60.0, 0.0)])
    build, steps = _count_steps()
    device = resolve_device("cpu")
    sample = iteration.measure_level1(build, device, 8, precision=iteration.SAMPLE)
    assert blocks == [1] and steps[0] == 2
    assert sample.converged and sample.iteration_ms == 60.0 and sample.block_means == [60.0]
    blocks[:], steps[0] = [], 0
    headline = iteration.measure_level1(build, device, 8)
    assert blocks == [1, 1, 1] and steps[0] == 5 and headline.iteration_ms == 60.0


def test_only_cpu_samples_are_lean() -> None:
    """Extra samples on CPU use SAMPLE; CUDA samples and every headline keep HEADLINE."""
    seen: list[tuple[iteration.Precision, iteration.Precision]] = []

    def measure(n: int) -> Sample:
        seen.append((iteration.default_precision("cpu"), iteration.default_precision("cuda")))
        return Sample(n, float(n), n << 20)

    collect_samples(measure, Sample(8, 8.0, 8 << 20), 0)
    assert seen and all(p == (iteration.SAMPLE, iteration.HEADLINE) for p in seen)
    assert iteration.default_precision("cpu") == iteration.HEADLINE


@pytest.mark.parametrize("user_profiling", [False, True])
def test_lean_sample_peak_equals_the_tracked_peak(user_profiling: bool) -> None:
    """A sample's peak from the allocator's events alone is the headline's tracker + allocator
    peak to the byte; with the user's own profiler running (no allocator events for us) the
    sample falls back to the tracker."""
    from skyline_nb.profiler.providers import build_trial, load_providers
    from skyline_nb.profiler.stacks import UserCode

    device = resolve_device("cpu")
    providers = load_providers(*PROVIDERS, UserCode(Path(mlp.__file__).parent))

    def peak(precision: iteration.Precision) -> int:
        build = lambda: build_trial(providers, 16, device)  # noqa: E731
        return iteration.measure_level1(build, device, 16, precision=precision).peak_bytes

    users_profiler = (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        if user_profiling
        else contextlib.nullcontext()
    )
    with users_profiler:
        lean, full = peak(iteration.SAMPLE), peak(iteration.HEADLINE)
    assert lean == full > 4 * 2**20

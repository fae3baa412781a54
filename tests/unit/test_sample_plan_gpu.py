"""Which sizes the profiler measures on a GPU, on a scripted clock (no GPU needed).

A GPU's samples are timed at the headline's precision (``timing.HEADLINE`` in chunks of three:
6–9 iterations of a few ms each), and their budget is issue 15's bar over the profile
(``samples.sampling_budget_ms``), not a count of the user's iterations: the clock advances by
what a GPU spends (the measured iteration times of an H100, BENCHMARKS.md), so the plan's
expected costs meet what the samples really take.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scripted_machine import MB, FakeOutOfMemory, Machine, gpu_timed, sample

from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler import sample_plan
from skyline_nb.profiler.sample_plan import sample_curve
from skyline_nb.profiler.samples import (
    COST_BAR,
    CPU_SAMPLING,
    CUDA_SAMPLING,
    FLOOR_SIZES,
    SAMPLING_FLOOR_MS,
    sampling_budget_ms,
)


@pytest.fixture
def clock(monkeypatch) -> dict[str, float]:
    """The plan's clock, in ms: each scripted GPU below advances it by what a size costs."""
    now = {"ms": 0.0}
    monkeypatch.setattr(sample_plan.time, "perf_counter", lambda: now["ms"] / 1000.0)
    return now


def peak_window_and_blocks(n: int, t: float) -> float:
    """What a size costs on an H100 beside its iterations: the peak's iteration, a block of
    ≥ 30 ms, Python (more under the peak tracker, which follows every op at the sizes above
    the user's)."""
    return t + gpu_timed(t) + (40.0 if n > 32 else 15.0)


def joined(times: dict[int, float], clock: dict[str, float],
           cost: Callable[[int, float], float] = peak_window_and_blocks
           ) -> Callable[[int], float]:
    """A GPU's time at n: the measured ``times`` joined in straight pieces; the clock advances
    by ``cost(n, time)``."""

    def gpu_time(n: int) -> float:
        t = float(np.interp(n, list(times), list(times.values())))
        clock["ms"] += cost(n, t)
        return t

    return gpu_time

def test_a_gpu_budget_is_the_bar_over_the_profile_and_a_cpu_keeps_its_count() -> None:
    """An H100's CNN of 3.7 ms iterations, 156 ms into its profile when the samples start
    (every other level has run before them): they may take 1.5× that, not the 250 ms floor
    (which took them to 1.86× its profile); a long GPU profile lets them go further. A CPU's
    budget stays 13 of the user's iterations, lifted towards the floor within the same bar (a
    CPU's CNN of 6.7 ms iterations, 110 ms into its profile: 165 ms, not 250)."""
    assert sampling_budget_ms(CUDA_SAMPLING, 3.7, 156.0) == pytest.approx(COST_BAR * 156.0)
    assert sampling_budget_ms(CUDA_SAMPLING, 3.7, 156.0) < SAMPLING_FLOOR_MS
    assert sampling_budget_ms(CUDA_SAMPLING, 1.8, 300.0) > 45 * 1.8
    assert sampling_budget_ms(CPU_SAMPLING, 30.0, 300.0) == 13 * 30.0
    assert sampling_budget_ms(CPU_SAMPLING, 0.5, 5000.0) == SAMPLING_FLOOR_MS
    assert sampling_budget_ms(CPU_SAMPLING, 6.7, 110.0) == pytest.approx(COST_BAR * 110.0)
    assert sampling_budget_ms(CPU_SAMPLING, 30.0, 100.0) == 13 * 30.0  # the count stands
    # a CPU's short step runs untimed before each sample: the floor keeps its sizes
    warm = CPU_SAMPLING.precision.warm_up_ms(0.5)
    assert warm > CPU_SAMPLING.precision.warm_ms
    assert sampling_budget_ms(CPU_SAMPLING, 0.5, 5000.0, warms=True) == pytest.approx(
        SAMPLING_FLOOR_MS + FLOOR_SIZES * warm)
    assert sampling_budget_ms(CPU_SAMPLING, 30.0, 300.0, warms=True) == 13 * 30.0


def test_memory_whose_slope_changes_beyond_2x_is_measured_at_4x_on_a_gpu(clock) -> None:
    """An H100's Transformer from 32 (BENCHMARKS.md, session 15): time grew 62 % at 2×, so the
    third size was ½×, and with a CPU's budget (250 ms here) the samples ended at 2×; the backward
    phase's peak grows 3 % faster beyond 64 than up to it, so memory extrapolated from 64 was
    2 % low at 16×. The measured iteration times and peaks, joined in straight pieces, stand in
    for the GPU, whose clock runs as a profile's does (``test_one_cheap_retime...``)."""
    times = {16: 9.34, 32: 10.8, 48: 14.9, 64: 17.5, 96: 25.5, 128: 30.9, 192: 47.1,
             256: 58.7, 384: 86.4, 512: 114.0}
    peaks = {16: 1051389476, 32: 1053445668, 48: 1131241224, 64: 1285893896,
             96: 1603571368, 128: 1921265320, 192: 2556653224, 256: 3192041128,
             384: 4462816936, 512: 5733592744}
    h100 = Machine(joined(times, clock),
                   lambda n: int(np.interp(n, list(peaks), list(peaks.values()))))
    # the bar over its profile without samples (0.80–0.98 s on that H100, session 16)
    found, models = sample(h100, 32, budget_ms=COST_BAR * 800.0, tolerance=0.05,
                           timed_ms=gpu_timed)
    assert sorted(found.peaks) == [16, 32, 64, 128]
    for n in (192, 256, 384, 512):
        assert models.predict_peak_bytes(n) == pytest.approx(peaks[n], rel=0.002)
    clock["ms"] = 0.0
    # a CPU's budget
    budget = max(CPU_SAMPLING.budget * times[32], SAMPLING_FLOOR_MS)
    found, models = sample(h100, 32, budget_ms=budget, tolerance=0.05, timed_ms=gpu_timed)
    assert sorted(found.peaks) == [16, 32, 64]  # memory 2 % low at 16×
    assert models.predict_peak_bytes(512) < 0.985 * peaks[512]


def test_a_gpu_samples_to_16x_where_its_cheap_iterations_afford_it(clock) -> None:
    """An H100's MLP from 32 (BENCHMARKS.md, session 16): samples to 4× (8…128) left the curve
    13.7 % low at 384 and 7.9 % on average up to 16×, where the time grows faster than up to
    128. A GPU's samples go on doubling to 16× within the bar over its profile (0.54 s without
    samples; 36–45 ms per sample here: timed iterations, the peak's window, the host)."""
    times = {8: 1.72, 32: 1.89, 48: 1.84, 64: 2.08, 96: 2.45, 128: 2.56, 192: 3.19,
             256: 3.57, 384: 4.97, 512: 5.66}
    gpu_time = joined(times, clock, lambda n, t: gpu_timed(t) + 1.5 * t + 5.0)

    def errors(reach: int) -> list[float]:
        clock["ms"] = 0.0
        found = sample_curve(Machine(gpu_time), 32, MB * 32, times[32], 1 << 40,
                             oom_errors=(FakeOutOfMemory,), tolerance=0.05,
                             budget_ms=COST_BAR * 540.0, timed_ms=gpu_timed, reach=reach)
        sizes = sorted(found.peaks)
        models = PerformanceModels.from_samples(
            sizes, [found.times[n] for n in sizes], [found.peaks[n] for n in sizes], 1 << 40,
            found.reason, tolerance=0.05)
        assert models.can_manipulate
        assert max(sizes) == 32 * reach
        held_out = (48, 96, 192, 256, 384, 512)  # the benchmark's, 1.5× to 16×
        return [abs(models.predict_iteration_ms(n) / times[n] - 1) for n in held_out]

    assert np.mean(errors(4)) > 0.07  # to 128 (4×): the old plan
    # 384 stays 7 % above the straight piece through 256 and 512 (a matmul's tile count), and
    # 48 read less than 32 (the host's noise)
    assert np.mean(errors(CUDA_SAMPLING.reach)) < 0.04


def test_one_cheap_retime_may_go_beyond_the_allowance(monkeypatch, clock) -> None:
    """A GPU profile's samples are each timed over ≥ 30 ms, so they alone spend the budget,
    and the example CNN on an H100 (user 32 at 3.3 ms) was refused in 2 of 3 profiles for one
    stalled block (16: 9.42 ms). One retime of ~30 ms is cheaper than losing the drag."""
    truth = {8: 3.15, 16: 3.19, 32: 3.28, 64: 4.77, 128: 8.69, 256: 16.22}

    def gpu_time(n: int) -> float:
        t = truth.get(n, 0.063 * n)
        clock["ms"] += peak_window_and_blocks(n, t)
        return 9.42 if n == 16 else t

    def profile(cheap: float) -> tuple[list[int], PerformanceModels]:
        monkeypatch.setattr(sample_plan, "CHEAP_RETIME", cheap)
        retimed: list[int] = []

        def retime(n: int, expected: float | None) -> float:
            retimed.append(n)
            clock["ms"] += 30.0
            return truth[n]

        # the bar over a profile of 0.12 s without samples (0.16 s on session 16's H100)
        _, models = sample(Machine(gpu_time), 32, budget_ms=COST_BAR * 120.0, tolerance=0.05,
                           retime=retime, timed_ms=gpu_timed)
        return retimed, models

    retimed, models = profile(sample_plan.CHEAP_RETIME)
    assert retimed == [16] and models.can_manipulate, models.reason
    retimed, models = profile(0.0)  # the rule before: within the allowance only
    assert retimed == [] and not models.can_manipulate


def test_a_launch_bound_floor_on_a_noisy_host_then_a_rise_keeps_the_drag() -> None:
    """An H100's LSTM from 8 (BENCHMARKS.md, session 18): ~9.3 ms up to about 200, its samples
    moving ±8 % with the host's pace, then growing; all three profiles were refused (R² over
    the sizes 0.84–0.93). The plan looks further while the time is flat and the bend is then
    trusted piece by piece: its floor and its rise."""
    wobble = [0.9, -0.3, 0.4, -0.8, 0.6, -0.2, 0.3, -0.5]

    def lstm(n: int) -> float:
        return max(9.3, 7.0 + 0.0098 * n) * (1 + 0.08 * wobble[int(math.log2(n)) % 8])

    found, models = sample(Machine(lstm), 8, tolerance=0.06, timed_ms=gpu_timed)
    assert max(found.peaks) == 512, sorted(found.peaks)
    assert models.can_manipulate and models.time.shape == "bend", models.reason
    assert 100 <= models.bend_batch_size <= 300
    for n in (12, 24, 48, 96):  # the held-out sizes of the benchmark: on the floor
        assert models.predict_iteration_ms(n) == pytest.approx(9.3, rel=0.08)
    assert models.max_throughput >= models.measured_max_throughput


def test_a_gpu_samples_halfway_between_powers_of_two_once_its_range_is_measured(
        clock) -> None:
    """An H100's Transformer from 32 (BENCHMARKS.md, session 18, run 2: the medians of the
    plain loops and samples): the time at 1.5× a power of two sits 5–7 % above the line
    through the powers of two around it (96: 24.99 ms, 64 and 128 say 23.6; 192: 46.29, 128
    and 256 say 44.1), so a curve through powers of two alone reads low between them. Once
    the range is measured (to 16×), a GPU's samples go halfway, the largest the bar over its
    profile affords first; a CPU's plan does not."""
    times = {16: 10.4, 32: 9.97, 48: 14.04, 64: 16.87, 96: 24.99, 128: 30.29, 192: 46.29,
             256: 57.9, 384: 85.57, 512: 113.08}

    def plan(between: bool, budget_ms: float) -> tuple[list[int], list[float]]:
        clock["ms"] = 0.0
        machine = Machine(joined(times, clock))
        found = sample_curve(machine, 32, MB * 32, times[32], 1 << 40,
                             oom_errors=(FakeOutOfMemory,), tolerance=0.05,
                             budget_ms=budget_ms, timed_ms=gpu_timed,
                             reach=CUDA_SAMPLING.reach, between=between)
        sizes = sorted(found.peaks)
        models = PerformanceModels.from_samples(
            sizes, [found.times[n] for n in sizes], [found.peaks[n] for n in sizes], 1 << 40,
            found.reason, tolerance=0.05)
        assert models.can_manipulate, models.reason
        assert clock["ms"] <= 1.05 * budget_ms  # expected costs, near what the clock says
        between_sizes = [n for n in machine.calls if n not in (16, 64, 128, 256, 512)]
        return between_sizes, [models.predict_iteration_ms(n) / times[n] - 1
                               for n in (48, 96, 192, 384)]

    assert CUDA_SAMPLING.between and not CPU_SAMPLING.between
    # the bar over a profile of 2.1 s (session 18: 1.25 s, its samples to 512 1.0 s)
    halves, errors = plan(True, COST_BAR * 2100.0)
    assert halves == [384, 192, 96, 48], halves  # the largest first
    before_halves, before = plan(False, COST_BAR * 2100.0)
    assert before_halves == [] and min(before) < -0.045  # low at 1.5×: 96 −4.7 %
    assert np.mean(np.abs(errors)) < 0.6 * np.mean(np.abs(before))
    # a shorter profile's bar: the largest halves it affords
    halves, _ = plan(True, COST_BAR * 1500.0)
    assert halves == [192], halves


def test_halves_stay_within_the_budget_at_what_the_samples_really_cost(clock) -> None:
    """An H100's LSTM from 8 and 32 (session 23): its peaks, tracked op by op over every
    time step, cost ~3× what the plan expects of a size, and its curve was refused while it
    sampled; with halves under the rescue's allowance and at the expected costs, its samples
    took 2.5–3.25× its profile (the bar: 1.5×). Halves are measured within the budget itself,
    at the cost the sizes so far really had."""
    wobble = [0.9, -0.3, 0.4, -0.8, 0.6, -0.2, 0.3, -0.5]

    def lstm(n: int) -> float:
        t = max(8.1, 4.0 + 0.012 * n) * (1 + 0.08 * wobble[int(math.log2(n)) % 8])
        clock["ms"] += 3 * peak_window_and_blocks(n, t)
        return t

    for user, budget_ms in ((32, 1500.0), (8, 1500.0), (32, 3000.0)):
        user_ms = lstm(user)
        clock["ms"] = 0.0
        machine = Machine(lstm)
        sample_curve(machine, user, MB * user, user_ms, 1 << 40,
                     oom_errors=(FakeOutOfMemory,), tolerance=0.06, budget_ms=budget_ms,
                     timed_ms=gpu_timed, reach=CUDA_SAMPLING.reach, between=True)
        halves = [n for n in machine.calls if n & (n - 1)]
        powers = [n for n in machine.calls if not n & (n - 1)]
        if halves:  # measured after every power of two
            assert machine.calls.index(halves[0]) >= len(powers), machine.calls
            assert clock["ms"] <= 1.05 * budget_ms, (machine.calls, clock["ms"])
    assert halves, machine.calls  # a budget twice as large affords some


def test_every_size_stays_within_the_budget_at_what_the_samples_really_cost(clock) -> None:
    """The same LSTM, its samples steady (its curve trusted throughout): an H100's took its
    samples to 1.97× its profile from 32 in session 26 (the bar: 1.5×), its powers of two
    expected at a third of what they cost. Every size is expected at the cost the sizes so
    far really had; before, 1.09–1.11× the budget here."""

    def lstm(n: int) -> float:
        t = max(8.1, 4.0 + 0.012 * n)
        clock["ms"] += 3 * peak_window_and_blocks(n, t)
        return t

    for user, budget_ms in ((32, 1500.0), (8, 1500.0), (32, 800.0), (8, 800.0)):
        user_ms = lstm(user)
        clock["ms"] = 0.0
        machine = Machine(lstm)
        found = sample_curve(machine, user, MB * user, user_ms, 1 << 40,
                             oom_errors=(FakeOutOfMemory,), tolerance=0.06,
                             budget_ms=budget_ms, timed_ms=gpu_timed,
                             reach=CUDA_SAMPLING.reach, between=True)
        assert clock["ms"] <= budget_ms, (machine.calls, clock["ms"])
        assert max(found.peaks) >= 4 * user  # the range the drag needs is still measured


def test_a_half_the_users_code_refuses_ends_no_range() -> None:
    """A step that splits its batch in pairs, from 10: ½× (5) is refused below (and so is no
    ¼× tried: the samples go on to 16×), and a half (15, between 10 and 20 that ran) is kept
    apart: the drag still spans 6 … 8× the largest sample, and no half is tried after it."""
    pairs = Machine(lambda n: 0.02 * n + 2.0, refuses=lambda n: n % 2 == 1)
    found, models = sample(pairs, 10, timed_ms=gpu_timed, reach=CUDA_SAMPLING.reach,
                           between=True)
    assert [r.batch_size for r in found.refused] == [5]
    assert [r.batch_size for r in found.between] == [15], found.between
    assert pairs.calls == [20, 40, 5, 80, 160, 120, 60, 30, 15] and 15 not in found.peaks
    assert models.can_manipulate and models.fails_at is None and models.min_batch_size() == 6
    assert models.max_batch_size() == 8 * max(found.peaks) == 8 * 160

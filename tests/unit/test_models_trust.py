"""When the fitted curves cannot be trusted, dragging is off and the reason says why in words.

The sample sets are the shapes seen in issue 12's walkthrough (a fast first sample and stalled
larger ones, flat times that scatter, noise around a CPU line with no fixed cost), the shapes
issue 15 asks to follow instead of refusing (launch-bound flat times, a bend, a CPU's time per
sample growing), and the bounds on the drag range (memory capacity, 8× the largest sample).
"""

from __future__ import annotations

import pytest

from skyline_nb.export.units import format_ms
from skyline_nb.models.fit import LinearFit
from skyline_nb.models.performance import EXTRAPOLATION_LIMIT, PerformanceModels
from skyline_nb.models.trust import AGAIN, MIN_R2, fit_time
from skyline_nb.profiler.samples import noise_warning, steep_start_warning

GIB = 1 << 30
SIZES = [16, 32, 64]


def fitted(times: list[float], sizes: list[int] = SIZES, capacity: int = GIB,
           memory_bound: bool = True) -> PerformanceModels:
    peaks = [1_000_000 * x + 50_000_000 for x in sizes]
    return PerformanceModels.from_samples(sizes, times, peaks, capacity, memory_bound=memory_bound)


@pytest.mark.parametrize(
    ("times", "words"),
    [
        # Issue 12: 0.42 ms at the user's batch, then stalls; "max 560 samples/s" beside 38,000.
        ([0.42, 60.0, 120.0], "far from what the curve"),
        ([0.42, 64.0, 128.0], "far from what the curve"),
        # Times that do not grow but scatter by 11 %: noise, not a launch-bound model.
        ([10.0, 11.8, 9.6], "vary by up to"),
        # Times that fall after growing: no curve of a training step does that.
        ([10.0, 14.0, 12.0], "less than the measurement noise"),
        ([10.0, 30.0, 25.0], "too scattered around the fitted curve"),
    ],
)
def test_untrustworthy_times_turn_dragging_off_and_say_why(times: list[float], words: str) -> None:
    models = fitted(times)
    assert not models.can_manipulate
    assert words in models.reason
    assert models.reason.endswith(f"; {AGAIN}")  # and what to do: profile again
    assert models.max_throughput is None  # nothing untrusted reaches the header


def test_what_to_do_comes_last_also_after_the_memory_lines_problems() -> None:
    """A refusal's advice (``AGAIN``) answers every reason before it, so it ends the message
    also where the memory line has problems of its own (they came after it)."""
    models = PerformanceModels.from_samples(SIZES, [10.0, 30.0, 25.0], [50_000_000] * 3, GIB)
    assert "peak memory does not grow with the batch size" in models.reason
    assert models.reason.endswith(f"; {AGAIN}") and models.reason.count(AGAIN) == 1


def test_a_fast_small_sample_off_a_straight_large_range_is_caught_despite_r2() -> None:
    sizes = [16, 256, 512, 1024]
    fit = LinearFit.fit(sizes, [0.42, 130.0, 256.0, 512.0])
    assert fit.r2 > 0.999  # R² alone would trust it: the large sizes dominate
    models = fitted([0.42, 130.0, 256.0, 512.0], sizes)
    assert not models.can_manipulate and "batch size 16" in models.reason


def test_flat_bent_and_steepening_times_are_followed_not_refused() -> None:
    flat = fitted([10.05, 9.98, 10.07])  # launch-bound: within 1 % of flat
    assert flat.can_manipulate and flat.time.shape == "flat" and flat.launch_bound_up_to == 64
    steeper = fitted([16.2, 30.7, 69.0])  # the CNN on one CPU thread, plain loops
    assert steeper.can_manipulate and steeper.time.shape == "convex"
    for x, t in zip(SIZES, [16.2, 30.7, 69.0], strict=True):
        assert steeper.predict_iteration_ms(x) == pytest.approx(t)
    sizes = [8, 16, 32, 64, 128]
    bent = fitted([10.0, 10.0, 10.0, 16.0, 32.0], sizes)  # flat to 32, then 0.25 ms/sample
    assert bent.can_manipulate and bent.time.shape == "bend"
    assert bent.bend_batch_size == pytest.approx(40.0)
    assert bent.asymptotic_throughput == pytest.approx(4000.0)


def test_r2_reason_names_the_threshold() -> None:
    models = fitted([10.0, 30.0, 25.0])
    assert f"at least {MIN_R2}" in models.reason and models.time.r2 < MIN_R2


def test_a_line_forced_through_the_origin_far_from_the_samples_is_refused() -> None:
    sizes = [4, 8, 16, 32]
    models = fitted([x - 2.5 for x in sizes], sizes)  # exact line through −2.5 ms at batch 0
    assert not models.can_manipulate and "batch size 4 (1.50 ms)" in models.reason


@pytest.mark.parametrize("times", [[20.3, 39.2, 81.5], [21.35, 44.37, 91.17]])
def test_a_negative_fixed_cost_is_drawn_through_the_origin(times: list[float]) -> None:
    # Noise around no fixed cost, and the CPU CNN's time per sample growing with the batch
    # (1.33, 1.39, 1.42 ms/sample): least squares says −0.3 and −2.05 ms at batch 0.
    assert LinearFit.fit(SIZES, times).intercept < 0
    models = PerformanceModels.from_samples(
        SIZES, times, [1_000_000 * x + 50_000_000 for x in SIZES], GIB, tolerance=0.08)
    assert models.can_manipulate and models.reason is None and models.time.shape == "line"
    assert models.time.intercept == 0.0
    products = sum(x * t for x, t in zip(SIZES, times, strict=True))
    through_origin = products / sum(x * x for x in SIZES)
    assert models.time.slope == pytest.approx(through_origin)
    # Throughput is then the same at every batch: it never falls as the batch grows.
    assert models.predict_throughput(1) == pytest.approx(models.predict_throughput(512))
    assert models.knee_batch_size == 1


def test_time_fit_is_least_squares_when_the_intercept_is_positive() -> None:
    fit, problems = fit_time(SIZES, [10.5, 19.25, 37.0], tolerance=0.05)
    line = LinearFit.fit(SIZES, [10.5, 19.25, 37.0])
    assert problems == [] and fit.shape == "line"
    assert (fit.slope, fit.intercept, fit.r2) == (line.slope, line.intercept, line.r2)


# ---- the drag range -------------------------------------------------------------------------
def test_cpu_without_budget_is_bounded_by_the_samples_not_the_ram() -> None:
    models = fitted([10.5, 19.25, 37.0], capacity=64 * GIB, memory_bound=False)
    assert models.max_batch_size() == EXTRAPOLATION_LIMIT * 64
    assert models.can_manipulate
    # Without a memory bound the capacity is not needed at all.
    assert fitted([10.5, 19.25, 37.0], capacity=0, memory_bound=False).can_manipulate


def test_real_memory_bound_below_the_extrapolation_limit_wins() -> None:
    capacity = 1_000_000 * 200 + 50_000_000  # fits exactly 200
    models = fitted([10.5, 19.25, 37.0], capacity=capacity)
    assert models.max_batch_size() == 200
    assert models.predict_peak_bytes(200) <= capacity < models.predict_peak_bytes(201)


def test_the_range_always_reaches_the_measured_sizes() -> None:
    too_small = fitted([10.5, 19.25, 37.0], capacity=1_000_000 * 40 + 50_000_000)
    assert not too_small.can_manipulate
    assert "measured batch size 64 beyond the memory capacity" in too_small.reason


def test_max_throughput_is_never_below_a_measured_one() -> None:
    # The CNN recorded on CPU (all four samples): the fastest, at 16, lies above the line.
    sizes, times = [16, 32, 64, 128], [21.35283175, 44.3705165, 91.166446, 174.015754]
    models = fitted(times, sizes)
    measured = max(1000.0 * x / t for x, t in zip(sizes, times, strict=True))
    top = models.max_batch_size()
    assert models.predict_throughput(top) < measured
    assert models.max_throughput == measured


def test_memory_line_without_memory_at_batch_one_cannot_drag() -> None:
    # The two largest sizes straddle a bend: their chord crosses zero before batch 1.
    models = PerformanceModels.from_samples(SIZES, [10.5, 19.25, 37.0], [100, 1000, 9000], GIB)
    assert models.memory(1) <= 0
    assert not models.can_manipulate and "no memory at batch size 1" in models.reason


def test_a_dict_from_before_the_bounded_range_cannot_drag() -> None:
    data = fitted([10.5, 19.25, 37.0]).to_dict()
    for key in ("memory_bound", "measured_range", "measured_max_throughput", "max_throughput"):
        del data[key]
    old = PerformanceModels.from_dict(data)
    assert not old.can_manipulate and "profile again" in old.reason
    assert old.max_throughput is None


def test_a_busy_machine_never_turns_noise_into_a_shape() -> None:
    """Three sizes fit a two-piece curve exactly whatever they are: it is drawn only when the
    samples were precise (the default tolerance); with a busy machine's wider tolerance the
    line within it stays (and the trust rules judge it)."""
    sizes, times = [16, 32, 64], [16.2, 30.7, 69.0]
    quiet, _ = fit_time(sizes, times)
    busy, _ = fit_time(sizes, times, tolerance=0.15)
    assert quiet.shape == "convex" and busy.shape == "line"
    flat_then_rise = [69.5, 70.0, 87.8]  # the bench MLP: a line within 6 % but R² 0.91
    assert fit_time([8, 16, 32], flat_then_rise)[0].shape == "convex"
    line, problems = fit_time([8, 16, 32], flat_then_rise, tolerance=0.10)
    assert line.shape == "line" and any("R²" in p for p in problems)


# An LSTM launch-bound on an H100 host (BENCHMARKS.md, session 14): 4–128 flat, the host's pace
# moving ±12 % between samples; all three profiles refused it before.
NOISY_SIZES = [4, 8, 16, 32, 64, 128]
NOISY_FLAT = [5.84, 7.20, 6.60, 7.40, 6.90, 7.56]


def test_flat_times_that_scatter_over_a_wide_range_are_launch_bound_not_refused() -> None:
    models = fitted(NOISY_FLAT, NOISY_SIZES)
    assert models.can_manipulate, models.reason
    assert models.time.shape == "flat" and models.launch_bound_up_to == 128
    assert models.predict_iteration_ms(100) == pytest.approx(sum(NOISY_FLAT) / 6)
    assert models.max_batch_size() <= 2 * 128  # flat: "up to at least 128", little beyond
    assert models.max_throughput >= models.measured_max_throughput
    warning = noise_warning(models, "cuda", NOISY_SIZES, NOISY_FLAT)
    assert "from batch size 4 to 128 (launch-bound)" in warning and "up to 16%" in warning
    # a CPU launches nothing: its flat time is a fixed cost per step
    assert "to 128 (a fixed cost per step)" in noise_warning(models, "cpu", NOISY_SIZES,
                                                             NOISY_FLAT)
    # a flat time within the usual tolerance needs no such sentence
    quiet = [7.0, 7.1, 6.95, 7.05, 7.0, 7.02]
    assert noise_warning(fitted(quiet, NOISY_SIZES), "cuda", NOISY_SIZES, quiet) is None


@pytest.mark.parametrize(
    ("sizes", "times"),
    [
        # too few sizes or too narrow a range to tell scatter from a slow growth: a CPU MLP
        # of 0.6 ms, 4–64, whose time really grows 30 % (t = 1.98)
        ([4, 16, 32, 64], [0.867, 1.039, 1.171, 1.162]),
        ([8, 12, 16, 32, 64], NOISY_FLAT[:5]),  # five sizes over 8×
        # a growth the samples do show, however noisy
        (NOISY_SIZES, [5.0, 5.9, 5.2, 6.6, 6.4, 7.6]),
        # no growth, but scattered beyond 20 % of the mean
        (NOISY_SIZES, [4.0, 7.2, 6.6, 7.4, 6.9, 7.6]),
    ],
)
def test_scatter_is_not_called_flat_without_the_evidence(sizes, times) -> None:
    models = fitted(times, sizes)
    assert not models.can_manipulate
    assert noise_warning(models, "cuda", sizes, times) is None


# An LSTM launch-bound on an H100 host, all three profiles of a row (BENCHMARKS.md, session
# 18): flat within ±10 % from 8 to 128 while the host's pace moved, then 10–12 ms at 256 and
# 512; R² over all seven sizes 0.84–0.93, so all three were refused.
BEND_SIZES = [8, 16, 32, 64, 128, 256, 512]
H100_LSTM = [
    [10.16, 8.97, 9.48, 9.02, 8.74, 9.80, 12.07],
    [8.96, 9.71, 9.42, 9.27, 9.79, 10.17, 11.91],
    [9.28, 8.57, 8.79, 8.22, 8.86, 10.60, 12.15],
]


@pytest.mark.parametrize("times", H100_LSTM)
def test_a_noisy_floor_with_a_clear_rise_is_a_bend_not_a_refusal(times: list[float]) -> None:
    assert fit_time(BEND_SIZES, times)[0].r2 < MIN_R2  # what refused it before
    models = fitted(times, BEND_SIZES)
    assert models.can_manipulate, models.reason
    assert models.time.shape == "bend" and 64 <= models.bend_batch_size <= 256
    floor = models.time.lines[0].intercept
    assert min(times[:4]) <= floor <= max(times[:4])
    assert models.predict_iteration_ms(48) == pytest.approx(floor)  # launch-bound there
    assert models.predict_iteration_ms(4096) > max(times)  # and growing past the bend
    assert models.max_throughput >= models.measured_max_throughput


# An H100's LSTM from 8, the three profiles of session 26 (benchmarks/results/h100-s26-*):
# 7.4–9.9 ms from 4 to 192 while the host's launch pace moved (floors scattered 12–17 %), then
# 10–12 ms at 256…512. R² 0.84–0.89, and the least-squares split followed one stray sample
# (9.37 ms at 48): two profiles were refused.
H100_LSTM_S26 = [
    {8: 7.42, 16: 8.17, 32: 8.16, 48: 8.00, 64: 7.70, 96: 8.40, 128: 7.76, 192: 8.02,
     256: 10.35, 384: 10.24, 512: 12.02},
    {8: 6.86, 16: 7.68, 32: 7.57, 48: 9.37, 64: 7.88, 96: 8.93, 128: 8.52, 192: 8.95,
     256: 8.99, 384: 10.20, 512: 12.05},
    {4: 9.37, 8: 8.60, 12: 8.92, 16: 8.71, 24: 8.71, 32: 8.46, 48: 8.05, 64: 9.01, 96: 9.86,
     128: 9.19, 192: 10.66, 256: 10.81, 384: 11.09, 512: 12.00},
]


@pytest.mark.parametrize("samples", H100_LSTM_S26)
def test_a_floor_scattered_by_a_moving_host_with_the_evidence_of_no_growth_is_a_bend(
        samples: dict[int, float]) -> None:
    sizes, times = list(samples), list(samples.values())
    assert fit_time(sizes, times)[0].r2 < MIN_R2
    models = fitted(times, sizes)
    assert models.can_manipulate, models.reason
    assert models.time.shape == "bend" and 96 <= models.bend_batch_size <= 320
    floor = models.time.lines[0].intercept
    on_floor = [t for n, t in samples.items() if n <= 96]
    assert min(on_floor) <= floor <= max(on_floor)
    for n in (10, 20, 40, 80):  # the benchmark's held-out sizes, on the floor
        assert models.predict_iteration_ms(n) == pytest.approx(floor)
    assert models.predict_iteration_ms(448) == pytest.approx(11.3, rel=0.1)
    assert models.max_throughput >= models.measured_max_throughput
    warning = noise_warning(models, "cuda", sizes, times)  # how uncertain, in words
    assert f"from batch size {sizes[0]} to about" in warning and "then grows" in warning
    assert "launch-bound" in warning and "predicted times are that uncertain" in warning


@pytest.mark.parametrize(
    "times",
    [
        # the floor scatters by more than even a scattered flat curve may (−22 %), however
        # clear the rise
        [10.0, 12.5, 7.8, 10.0, 9.8, 13.0, 16.0],
        # a floor scattered by ±14 % over four sizes (8×): too few to tell scatter from a
        # slow growth (a flat curve needs five over 16×)
        [10.0, 11.4, 8.6, 10.0, 11.8, 12.5, 14.5],
        # a rise of 15 % over a floor that scatters by 9 %: the floor's noise can make it
        [9.1, 10.9, 9.9, 10.2, 9.8, 10.2, 11.5],
        # the samples past the bend are no line (23 % off it)
        [9.0, 9.2, 9.1, 8.9, 14.0, 12.5, 20.0],
    ],
)
def test_a_bend_whose_pieces_do_not_hold_stays_refused(times: list[float]) -> None:
    models = fitted(times, BEND_SIZES)
    assert not models.can_manipulate
    assert models.reason


STEEP = [2, 8, 16, 32, 64, 128, 256, 512]
MLP_AT_8 = [1.369, 1.931, 2.132, 2.479, 2.918, 4.202, 6.661, 11.159]  # CPU, session 19


def test_a_time_that_falls_faster_at_the_smallest_size_is_joined_by_a_piece() -> None:
    """A CPU's tiny MLP from 8: 1.37 ms at 2, where the line through 8…512 says 1.80 (1.31×:
    refused as 'far from the curve'). The line through the others is kept and a straight piece
    joins the smallest sample to it: exact there, the line from 8 on, the drag on."""
    models = fitted(MLP_AT_8, STEEP, memory_bound=False)
    assert models.can_manipulate, models.reason
    time = models.time
    assert time.pieces and time.shape == "line" and time.lines[0].end == 8
    rest = LinearFit.fit(STEEP[1:], MLP_AT_8[1:])
    assert models.predict_iteration_ms(2) == pytest.approx(1.369, rel=1e-12)
    for n in (8, 100, 4096):
        assert models.predict_iteration_ms(n) == pytest.approx(rest(n), rel=1e-12)
    assert rest(5) > models.predict_iteration_ms(5) > 1.369  # on the piece: between the two
    assert models.max_throughput >= models.measured_max_throughput
    assert models.turns(models.max_batch_size())[:2] == [1.0, 8.0]
    said = steep_start_warning(models)
    assert said == ("below batch size 8 the iteration time falls faster than the line through "
                    f"the larger sizes (1.37 ms at 2, where that line says "
                    f"{format_ms(rest(2))}): predictions there follow a straight piece between "
                    "them")
    assert steep_start_warning(fitted(MLP_AT_8[1:], STEEP[1:], memory_bound=False)) is None


@pytest.mark.parametrize("first", [
    0.8,  # 2.25× below the line: a measurement gone wrong, not a step (issue 12)
    4.0,  # above the line, and no floor: a stall, not a faster step
])
def test_a_smallest_sample_off_the_line_otherwise_stays_refused(first: float) -> None:
    models = fitted([first, *MLP_AT_8[1:]], STEEP, memory_bound=False)
    assert not models.can_manipulate and "batch size 2" in models.reason, models.reason

"""The performance models: fits, predictions, inverses, clamps, the knee and the JSON layout."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from within_ulps import within_ulps

from skyline_nb.models.knee import place_knee
from skyline_nb.models.performance import (
    EXTRAPOLATION_LIMIT,
    FLAT_EXTRAPOLATION_LIMIT,
    KNEE_GAIN,
    MAX_BATCH_SIZE,
    OLD_REPORT,
    LinearFit,
    PerformanceModels,
)

GIB = 1 << 30
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def exact_models(
    a: float = 0.5,
    b: float = 4.0,
    c: float = 2**20,
    d: float = 5e7,
    capacity: int = GIB,
    sizes: tuple[int, ...] = (4, 8, 16, 32),
) -> PerformanceModels:
    return PerformanceModels.from_samples(
        list(sizes), [a * x + b for x in sizes], [round(c * x + d) for x in sizes], capacity
    )


def given(
    a: float, b: float, c: float = 1e6, d: float = 1e7, capacity: int = GIB,
    measured: tuple[int, int] = (4, 32), memory_bound: bool = True,
) -> PerformanceModels:
    """Lines given by hand (as an edited report could hold them), measured over ``measured``."""
    models = PerformanceModels(LinearFit(a, b, 1.0), LinearFit(c, d, 1.0), capacity, True,
                               memory_bound=memory_bound, measured_range=measured)
    place_knee(models, [], [])  # lines without samples: no spread
    return models


# ---- fits ----------------------------------------------------------------------------------
def test_exact_lines_are_recovered() -> None:
    models = exact_models()
    assert models.can_manipulate and models.reason is None
    assert models.time.slope == pytest.approx(0.5, rel=1e-12)
    assert models.time.intercept == pytest.approx(4.0, rel=1e-12)
    assert models.memory.slope == pytest.approx(2**20, rel=1e-12)
    assert models.memory.intercept == pytest.approx(5e7, rel=1e-12)
    assert models.time.r2 == pytest.approx(1.0) and models.memory.r2 == pytest.approx(1.0)
    assert max(abs(r) for r in models.memory.residuals) < 1e-3  # bytes
    assert models.predict_iteration_ms(64) == pytest.approx(36.0)
    assert models.predict_peak_bytes(64) == pytest.approx(64 * 2**20 + 5e7)


def test_noisy_lines_match_numpy_least_squares() -> None:
    rng = np.random.default_rng(7)
    xs = np.array([4, 8, 16, 32, 48], dtype=float)
    ys = 1.3 * xs + 7.0 + rng.normal(0.0, 0.4, xs.size)
    fit = LinearFit.fit(xs, ys)
    slope, intercept = np.polyfit(xs, ys, 1)
    assert fit.slope == pytest.approx(slope, rel=1e-9)
    assert fit.intercept == pytest.approx(intercept, rel=1e-9)
    assert 0.99 < fit.r2 < 1.0
    assert sum(fit.residuals) == pytest.approx(0.0, abs=1e-9)  # least squares: residuals sum to 0
    assert fit.residuals == pytest.approx(list(ys - (slope * xs + intercept)), abs=1e-9)


def test_fit_keeps_exactness_with_byte_sized_values() -> None:
    xs = [1000, 2000, 4000]
    fit = LinearFit.fit(xs, [3e9 * x + 7e10 for x in xs])
    assert fit.slope == pytest.approx(3e9, rel=1e-12)
    assert fit.intercept == pytest.approx(7e10, rel=1e-9)


@pytest.mark.parametrize(
    ("xs", "ys"),
    [
        ([1.0], [2.0]),
        ([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]),
        ([1.0, math.nan], [1.0, 2.0]),
        ([1.0, 2.0], [1.0, math.inf]),
        ([1.0, 2.0, 3.0], [1.0, 2.0]),
    ],
)
def test_fit_rejects_what_is_not_a_line(xs: list[float], ys: list[float]) -> None:
    with pytest.raises(ValueError):
        LinearFit.fit(xs, ys)


def test_flat_values_have_r2_one() -> None:
    fit = LinearFit.fit([1, 2, 3], [5.0, 5.0, 5.0])
    assert (fit.slope, fit.r2) == (0.0, 1.0)


# ---- degenerate cases ----------------------------------------------------------------------
def test_fewer_than_three_distinct_sizes_turn_predictions_off() -> None:
    models = PerformanceModels.from_samples([8, 16, 16], [5.0, 9.0, 9.1], [100, 200, 200], GIB)
    assert not models.can_manipulate
    assert models.time is None and models.memory is None
    assert "only 2 batch size(s)" in models.reason
    assert models.max_throughput is None and models.knee_batch_size is None
    with pytest.raises(ValueError, match="predictions are off"):
        models.predict_throughput(8)
    with pytest.raises(ValueError):
        models.batch_size_for_memory(1000)


def test_sampler_reason_is_kept_when_points_are_missing() -> None:
    why = "only 2 batch size(s) could be measured (batch size 32 ran out of memory)"
    models = PerformanceModels.from_samples([8, 16], [5.0, 9.0], [100, 200], GIB, reason=why)
    assert models.reason == why


def test_non_finite_and_impossible_samples_are_left_out() -> None:
    models = PerformanceModels.from_samples(
        [4, 8, 16, 32, 64, 0],
        [3.0, 5.0, 9.0, math.nan, -1.0, 1.0],
        [140, 180, math.nan, 420, 740, 100],
        GIB,
    )
    assert not models.can_manipulate
    assert "4 sample(s) had invalid values" in models.reason
    kept = PerformanceModels.from_samples(
        [4, 8, 16, 32], [3.0, 5.0, 9.0, math.inf], [140, 180, 260, 420], GIB
    )
    assert kept.can_manipulate and kept.time.slope == pytest.approx(0.5)


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError, match="length"):
        PerformanceModels.from_samples([1, 2, 3], [1.0, 2.0], [1, 2, 3], GIB)


def test_flat_time_is_launch_bound_and_drags_up_to_twice_the_samples() -> None:
    models = PerformanceModels.from_samples([4, 8, 16], [9.0, 9.0, 9.0], [10, 20, 40], GIB)
    assert models.can_manipulate and models.reason is None
    assert models.time.shape == "flat" and models.launch_bound_up_to == 16
    assert models.max_batch_size() == FLAT_EXTRAPOLATION_LIMIT * 16
    # Doubling the batch doubles the throughput: no knee, the most at the top of the range.
    assert models.knee_batch_size is None
    assert models.max_throughput == pytest.approx(1000.0 * 32 / 9.0)
    assert models.asymptotic_throughput is None and models.bend_batch_size is None


def test_a_throughput_tied_with_a_sample_is_the_samples_not_batch_one() -> None:
    """A CNN profiled on a busy 2-core host (session 57): its time grew faster than its batch
    (a convex curve), and below its smallest sample the curve runs through the origin, so the
    throughput at batch 1 is the sample's 169.85 samples/s to the last digit. The maximum is
    the measured one, not a prediction "at batch 1 · extrapolated"."""
    xs = [16, 32, 64, 128]
    ts = [94.2019705, 191.31651476364118, 395.61714062391036, 979.7755940498498]
    models = PerformanceModels.from_samples(xs, ts, [1126408 * x + 146552 for x in xs], GIB,
                                            memory_bound=False)
    assert models.can_manipulate and models.time.shape == "convex"
    assert models.predict_throughput(1) == pytest.approx(1000 * 16 / ts[0], rel=1e-12)
    assert models.max_throughput == models.measured_max_throughput == 1000 * 16 / ts[0]
    assert models.max_throughput_batch_size is None
    # a curve above every sample by more than rounding still names where
    rising = PerformanceModels.from_samples(xs, [0.5 * x + 4 for x in xs],
                                            [1126408 * x + 146552 for x in xs], GIB)
    assert rising.max_throughput_batch_size == rising.max_batch_size()


def test_memory_not_growing_disables_dragging_without_dividing_by_zero() -> None:
    models = PerformanceModels.from_samples([4, 8, 16], [3.0, 5.0, 9.0], [500, 500, 500], GIB)
    assert not models.can_manipulate
    assert models.reason == "peak memory does not grow with the batch size"
    assert models.max_batch_size() == 1
    assert models.batch_size_for_memory(10**9) == 1
    both = PerformanceModels.from_samples([4, 8, 16], [9.0, 8.0, 7.0], [500, 400, 300], GIB)
    assert both.reason.count("does not grow") == 2


def test_unknown_capacity_disables_dragging() -> None:
    models = exact_models(capacity=0)
    assert not models.can_manipulate and "capacity is unknown" in models.reason
    assert models.max_batch_size() == 1


# ---- capacity and clamps -------------------------------------------------------------------
def test_max_batch_size_is_the_largest_that_fits() -> None:
    models = given(1.0, 3.0, c=1000.0, d=10_000.0, capacity=110_000)
    assert models.max_batch_size() == 100
    assert models.predict_peak_bytes(100) <= models.capacity_bytes
    assert models.predict_peak_bytes(101) > models.capacity_bytes


def test_a_cpu_without_a_budget_is_not_bounded_by_its_ram_but_never_passes_it() -> None:
    """Free RAM is no bound a user means: the range is 8× the samples where that fits; where it
    does not (issue 12's walkthrough: 53.6 GiB offered at batch 32,000,000 on a machine with
    22.4 GiB free), the range ends where the predicted peak still fits."""
    roomy = given(1.0, 3.0, c=1000.0, d=10_000.0, capacity=GIB, memory_bound=False)
    assert roomy.max_batch_size() == EXTRAPOLATION_LIMIT * 32
    tight = given(1.0, 3.0, c=1000.0, d=10_000.0, capacity=110_000, memory_bound=False)
    assert tight.max_batch_size() == 100 and tight.can_manipulate
    assert tight.predict_peak_bytes(100) <= tight.capacity_bytes
    unknown = given(1.0, 3.0, c=1000.0, d=10_000.0, capacity=0, memory_bound=False)
    assert unknown.max_batch_size() == EXTRAPOLATION_LIMIT * 32


def test_capacity_below_one_sample_still_allows_batch_one_but_no_drag() -> None:
    models = given(1.0, 3.0, c=1000.0, d=10_000.0, capacity=5_000)
    assert models.max_batch_size() == 1
    assert models.batch_size_for_memory(10**9) == 1
    assert models.batch_size_for_throughput(10**6) == 1
    assert models.knee_batch_size is None
    # The samples ran up to 32, which this memory line says cannot fit: the lines contradict
    # the measurements, so the drag is off rather than stuck at a range that excludes them.
    assert not models.can_manipulate and "measured batch size 32" in models.reason


def test_near_zero_memory_slope_is_capped() -> None:
    models = given(1.0, 3.0, c=1e-12, d=0.0, capacity=80 * GIB)
    assert models.max_batch_size() == EXTRAPOLATION_LIMIT * 32
    unbounded = given(1.0, 3.0, c=1e-12, d=0.0, capacity=80 * GIB, measured=None)
    assert unbounded.max_batch_size() == MAX_BATCH_SIZE
    assert unbounded.batch_size_for_memory(math.inf) == MAX_BATCH_SIZE
    assert not unbounded.can_manipulate and unbounded.reason == OLD_REPORT


@pytest.mark.parametrize("target", [-1e9, -1.0, 0.0, 1e-9, math.nan, -math.inf])
def test_memory_inverse_clamps_low_and_invalid_targets_to_one(target: float) -> None:
    assert exact_models().batch_size_for_memory(target) == 1


@pytest.mark.parametrize("target", [GIB, 10.0 * GIB, math.inf])
def test_memory_inverse_clamps_to_capacity(target: float) -> None:
    models = exact_models()
    assert models.batch_size_for_memory(target) == models.max_batch_size()


@pytest.mark.parametrize("factor", [0.9999999, 1.0, 1.5, 1e9])
def test_throughput_at_or_beyond_the_range_gives_the_largest_batch(factor: float) -> None:
    models = exact_models()
    top = models.max_batch_size()
    assert top == EXTRAPOLATION_LIMIT * 32
    # The maximum is what the largest batch of the range gives, not the asymptote 1000/a = 2000
    # that only an infinite batch reaches.
    assert models.max_throughput == pytest.approx(1000.0 * top / (0.5 * top + 4.0))
    assert models.max_throughput < 2000.0
    target = factor * models.max_throughput
    expected = top if factor >= 1 else models.batch_size_for_throughput(target)
    assert models.batch_size_for_throughput(target) == expected
    assert 1 <= models.batch_size_for_throughput(target) <= top
    assert models.batch_size_for_throughput(2000.0 * factor) == top


@pytest.mark.parametrize("target", [-5.0, 0.0, 1e-6, math.nan])
def test_throughput_inverse_clamps_low_targets_to_one(target: float) -> None:
    assert exact_models().batch_size_for_throughput(target) == 1


def test_rounding_is_pythons_ties_to_even_as_the_javascript_mirror() -> None:
    models = given(1.0, 3.0, c=1000.0, d=0.0, capacity=GIB)
    assert models.batch_size_for_memory(10_500.0) == 10
    assert models.batch_size_for_memory(11_500.0) == 12
    assert models.batch_size_for_memory(12_499.0) == 12
    assert models.batch_size_for_memory(1_499.0) == 1


# ---- inverse ∘ predict ---------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b"), [(0.5, 4.0), (0.01, 100.0), (3.0, 0.2)])
def test_inverse_of_prediction_is_identity(a: float, b: float) -> None:
    models = given(a, b, c=2**20, d=5e7, capacity=4 * GIB, measured=(4, 1024))
    top = models.max_batch_size()
    for x in [1, 2, 3, 7, 8, 63, 64, 500, top - 1, top]:
        if models.predict_iteration_ms(x) > 0:
            assert models.batch_size_for_throughput(models.predict_throughput(x)) == x
        assert models.batch_size_for_memory(models.predict_peak_bytes(x)) == x


def test_negative_intercept_gives_the_smallest_batch_reaching_a_throughput_and_cannot_drag(
) -> None:
    models = given(2.0, -1.5, c=1000.0, d=10_000.0, capacity=10_000_000)
    asymptote = 1000.0 / 2.0
    assert models.predict_throughput(1) > models.predict_throughput(50) > asymptote
    # The throughput falls as the batch grows: batch 1 reaches any target below its own.
    assert models.batch_size_for_throughput(asymptote * 0.5) == 1
    assert models.batch_size_for_throughput(1e9) == 1
    assert models.knee_batch_size == 1
    # Throughput falling as the batch grows is what a negative fixed cost claims: no drag.
    assert not models.can_manipulate and "negative fixed cost" in models.reason
    assert models.max_throughput is None


def test_throughput_inverse_is_the_nearest_batch_by_brute_force() -> None:
    models = given(0.37, 5.3, c=1000.0, d=0.0, capacity=300_000)
    sizes = np.arange(1, models.max_batch_size() + 1)
    throughputs = 1000.0 * sizes / (0.37 * sizes + 5.3)
    for target in np.linspace(1.0, 1000.0 / 0.37 * 1.1, 97):
        nearest = int(sizes[np.argmin(np.abs(throughputs - target))])
        assert abs(models.batch_size_for_throughput(float(target)) - nearest) <= 1


# ---- knee ----------------------------------------------------------------------------------
def brute_force_knee(a: float, b: float, limit: int) -> int | None:
    """Smallest x with T(2x) < (1+g)·T(x), in exact rational arithmetic on the same floats."""
    fa, fb, gain = Fraction(a), Fraction(b), Fraction(KNEE_GAIN)
    for x in range(1, limit + 1):
        t1 = Fraction(x) / (fa * x + fb)
        t2 = Fraction(2 * x) / (fa * 2 * x + fb)
        if t2 < (1 + gain) * t1:
            return x
    return None


@pytest.mark.parametrize(
    ("a", "b"),
    [(0.5, 4.3), (0.013, 2.7), (1.7, 0.9), (0.29, 31.0), (2.0, 0.0), (0.4, -2.0), (5e-3, 1.1)],
)
def test_knee_matches_brute_force_search(a: float, b: float) -> None:
    models = given(a, b, c=1.0, d=0.0, capacity=10**7, measured=(4, 10**7 // 8))
    expected = brute_force_knee(a, b, models.max_batch_size())
    bound = b * (1 - KNEE_GAIN) / (2 * KNEE_GAIN * a)
    if abs(bound - round(bound)) < 1e-6 and b > 0:  # float rounding at an exact boundary
        assert abs(models.knee_batch_size - expected) <= 1
    else:
        assert models.knee_batch_size == expected


def test_knee_beyond_capacity_is_none_and_knee_properties_hold() -> None:
    assert given(0.01, 100.0, c=1e6, d=0.0, capacity=10**8).knee_batch_size is None
    models = given(0.5, 4.3)
    knee = models.knee_batch_size
    gain = models.predict_throughput(2 * knee) / models.predict_throughput(knee)
    before = models.predict_throughput(2 * knee - 2) / models.predict_throughput(knee - 1)
    assert gain < 1 + KNEE_GAIN <= before


# ---- serialisation -------------------------------------------------------------------------
def test_to_dict_round_trips_and_is_strict_json() -> None:
    for models in (
        exact_models(),
        given(2.0, -1.5),
        exact_models(sizes=(8, 16)),
        PerformanceModels.from_samples([4, 8, 16], [9.0, 8.0, 7.0], [3, 2, 1], GIB),
        PerformanceModels.from_samples([4, 8, 16], [3.0, 5.0, 9.0], [3, 5, 9], GIB, fails_at=20),
    ):
        data = json.loads(json.dumps(models.to_dict(), allow_nan=False))
        back = PerformanceModels.from_dict(data)
        assert back == models
        assert back.to_dict() == models.to_dict()


def test_dict_layout_keeps_the_keys_the_widget_reads() -> None:
    data = exact_models().to_dict()
    assert {
        "time",
        "memory",
        "capacity_bytes",
        "can_manipulate",
        "reason",
        "knee_batch_size",
        "memory_bound",
        "measured_range",
        "measured_max_throughput",
        "max_throughput",
        "max_batch_size",
    } <= data.keys()
    assert data["measured_range"] == [4, 32] and data["memory_bound"] is True
    assert set(data["time"]) == {"lines", "shape", "slope", "intercept", "r2", "residuals"}
    assert data["time"]["lines"] == [{"slope": data["time"]["slope"],
                                      "intercept": data["time"]["intercept"]}]
    assert data["max_batch_size"] == exact_models().max_batch_size()
    assert PerformanceModels.from_dict({**data, "added_later": 1}) == exact_models()
    assert "fails_at" not in data  # written only where a size failed: older reports read alike
    failing = PerformanceModels.from_samples([4, 8, 16], [3.0, 5.0, 9.0], [3, 5, 9], GIB,
                                             fails_at=20).to_dict()
    assert failing["fails_at"] == 20 and failing["max_batch_size"] == 19


def test_shared_fixture_for_the_javascript_mirror_is_current() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_models_cases", FIXTURES / "make_models_cases.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (FIXTURES / "models_cases.json").read_text(encoding="utf-8")
    assert json.loads(module.render()) == within_ulps(json.loads(committed)), (
        "run: python tests/fixtures/make_models_cases.py")
    cases = json.loads(committed)["cases"]
    assert {c["name"] for c in cases} >= {"exact", "negative_time_intercept", "too_few_points"}


def test_memory_follows_the_upper_segment_of_a_bent_peak() -> None:
    """Peak = max of two phases (lines): with each sample's peak per phase the curve is exact
    everywhere, the hinge between two samples included; with the step's peaks alone, exact at
    every sample and beyond them (the last segment), the straight piece across the hinge."""

    def phases(x: float) -> dict[str, float]:
        return {"forward": 1_000_000 + 600_000 * x, "backward": 4_000_000 + 500_000 * x}

    def peak(x: float) -> float:
        return max(phases(x).values())

    xs = [8, 16, 32, 64]
    by_phase = PerformanceModels.from_samples(
        xs, [2.0 * x + 5 for x in xs], [peak(x) for x in xs], capacity_bytes=10**12,
        peak_phases=[phases(x) for x in xs])
    alone = PerformanceModels.from_samples(xs, [2.0 * x + 5 for x in xs],
                                           [peak(x) for x in xs], capacity_bytes=10**12)
    for x in (1, 8, 12, 16, 30, 32, 128, 256, 512):
        assert by_phase.predict_peak_bytes(x) == pytest.approx(peak(x), rel=1e-12)
    assert by_phase.peak_phase_at(12) == "backward" and by_phase.peak_phase_at(64) == "forward"
    for x in (8, 16, 32, 64, 128, 512):
        assert alone.predict_peak_bytes(x) == pytest.approx(peak(x), rel=1e-12)
    chord = peak(16) + (peak(32) - peak(16)) * (30 - 16) / 16
    assert alone.predict_peak_bytes(30) == pytest.approx(chord, rel=1e-12)
    assert chord > peak(30)
    least_squares = LinearFit.fit(xs, [peak(x) for x in xs])
    assert least_squares(256) < 0.99 * peak(256)  # what the first fit would have said
    assert by_phase.memory.r2 == pytest.approx(1.0) and alone.memory.r2 == pytest.approx(1.0)

"""A measurement joins the time curve (``models/joined.py``): refitted where one curve goes
near every sample, bridged by a straight piece where the step's growth turns past the samples,
refused with a reason where neither holds; the memory curve and the drag's rules as they were."""

from __future__ import annotations

import pytest

from skyline_nb.models.curve import BEND, LINE
from skyline_nb.models.joined import NotJoined, _through, with_time_sample
from skyline_nb.models.performance import EXTRAPOLATION_LIMIT, PerformanceModels

GIB = 1 << 30
SIZES = [4, 8, 16]


def profiled(times: list[float], sizes: list[int] = SIZES, **kwargs) -> PerformanceModels:
    """What a profile fitted: its samples' times, peaks growing 1 MiB a sample."""
    peaks = [(1 << 20) * n + 50_000_000 for n in sizes]
    models = PerformanceModels.from_samples(sizes, times, peaks, 64 * GIB, memory_bound=False,
                                            **kwargs)
    assert models.can_manipulate, models.reason
    return models


def drag_invariants(models: PerformanceModels, sizes: list[int], times: list[float]) -> None:
    """What ``report_checks`` asks of a report's curves, for these samples."""
    assert models.can_manipulate and not models.line_problems()
    bottom, top = models.min_batch_size(), models.max_batch_size()
    assert top == EXTRAPOLATION_LIMIT * max(sizes) and bottom <= min(sizes)
    best = models.max_throughput
    assert all(1000.0 * n / t <= best * (1 + 1e-9) for n, t in zip(sizes, times, strict=True))
    for batch in [bottom, *models.turns(top), top]:
        assert models.predict_iteration_ms(batch) > 0
        assert models.predict_throughput(batch) <= best * (1 + 1e-9)
    assert bottom <= models.knee_batch_size <= top


def test_a_measurement_on_the_curve_confirms_it_and_widens_the_range() -> None:
    times = [0.5 * n + 4 for n in SIZES]
    models = profiled(times)
    joined = with_time_sample(models, SIZES, times, 64, 1.05 * (0.5 * 64 + 4))
    assert joined.time.lines == models.time.lines  # within the tolerance: noise, not news
    assert joined.measured_range == (4, 64)
    assert joined.memory.to_dict() == models.memory.to_dict()  # peaks are not refitted
    drag_invariants(joined, [*SIZES, 64], [*times, 36.0])
    assert models.measured_range == (4, 16)  # the profile's own models are left as they were


def test_a_time_per_sample_that_falls_past_the_samples_is_through() -> None:
    """The example CNN at 2 threads: 1.52, 1.39, then 0.99 ms a sample from 4 to 8, 16, 64; no
    line or steepening curve goes within 6 % of all four."""
    times = [8.8, 14.9, 26.0]
    models = profiled(times)
    joined = with_time_sample(models, SIZES, times, 64, 73.4)
    time = joined.time
    assert time.pieces
    for n in SIZES:  # where the profile measured: its curve
        assert time(n) == pytest.approx(models.time(n))
    assert time(64) == pytest.approx(73.4)
    slope = (73.4 - models.time(16)) / 48
    assert time(40) == pytest.approx(models.time(16) + 24 * slope)  # between: the straight piece
    assert time(128) == pytest.approx(73.4 + 64 * slope)  # beyond: on along it
    assert joined.asymptotic_throughput == pytest.approx(1000 / slope)
    drag_invariants(joined, [*SIZES, 64], [*times, 73.4])


def test_a_measurement_between_a_bridges_ends_splits_it_there() -> None:
    """A second measurement between the profile's largest sample and the first one: the
    bridge was a chord; the curve now goes through both measurements, as it was elsewhere."""
    times = [8.8, 14.9, 26.0]
    first = with_time_sample(profiled(times), SIZES, times, 64, 73.4)
    sizes, ts = [*SIZES, 64], [*times, 73.4]
    assert first.time(40) == pytest.approx(49.74, abs=0.01)  # the chord: +10.6 % off 55
    joined = with_time_sample(first, sizes, ts, 40, 55.0)
    for n, t in zip([*sizes, 40], [*ts, 55.0], strict=True):
        assert joined.time(n) == pytest.approx(t if n in (40, 64) else first.time(n))
    for n in (8, 12, 128, 300):  # outside 16..64 the curve is as it was
        assert joined.time(n) == pytest.approx(first.time(n))
    assert joined.measured_range == (4, 64)
    drag_invariants(joined, [*sizes, 40], [*ts, 55.0])
    with pytest.raises(NotJoined, match="ran no faster than batch size 64"):
        with_time_sample(first, sizes, ts, 40, 80.0)
    # measured at 40 again, 13 % faster: it replaces the first, between the same pieces' ends
    again = with_time_sample(joined, [*sizes, 40], [*ts, 55.0], 40, 48.0)
    assert again.time(40) == pytest.approx(48.0) and again.time(64) == pytest.approx(73.4)
    assert again.time(28) == pytest.approx((first.time(16) + 48.0) / 2)
    drag_invariants(again, [*sizes, 40], [*ts, 48.0])


def test_between_the_profiles_own_samples_its_line_holds_also_after_a_piece_past_them() -> None:
    """The profile's line, ended at its largest sample by a piece past it, is still a line
    fitted through its samples: far from it at 12 is the host's pace, not a chord to split."""
    times = [8.8, 14.9, 26.0]
    first = with_time_sample(profiled(times), SIZES, times, 64, 73.4)
    with pytest.raises(NotJoined, match="no curve of the profile's kind goes near it"):
        with_time_sample(first, [*SIZES, 64], [*times, 73.4], 12, 26.0)


def test_a_measurement_off_the_line_refits_it_where_one_line_takes_them_all() -> None:
    times = [0.5 * n + 4 for n in SIZES]
    joined = with_time_sample(profiled(times), SIZES, [8.2, 7.9, 12.1], 64, 36.0)
    assert joined.time.shape == LINE and not joined.time.pieces
    assert joined.time.slope == pytest.approx(0.5, rel=0.02)
    drag_invariants(joined, [*SIZES, 64], [8.2, 7.9, 12.1, 36.0])


def test_a_time_that_steepens_past_the_samples_is_followed() -> None:
    """A Llama-style model at 4 (plain loops at 2, 4, 8 and 64, session 44): its time per
    sample grows from 20 ms to 25 ms past 8, and the line through 2–8 is 18 % fast at 64."""
    sizes, times = [2, 4, 8], [84.4, 126.8, 204.2]
    models = profiled(times, sizes)
    assert models.predict_iteration_ms(64) < 0.85 * 1613.0
    joined = with_time_sample(models, sizes, times, 64, 1613.0)
    assert joined.predict_iteration_ms(64) == pytest.approx(1613.0, rel=models.tolerance)
    assert joined.predict_throughput(64) < models.predict_throughput(64)
    drag_invariants(joined, [*sizes, 64], [*times, 1613.0])


def test_a_flat_time_that_grows_past_the_samples_bends_where_they_end() -> None:
    """Launch-bound up to 16 (a GPU's floor, the drag to 2× it), then slower at 32."""
    times = [9.0, 9.1, 8.9]
    models = profiled(times)
    assert models.launch_bound_up_to == 16
    joined = with_time_sample(models, SIZES, times, 32, 15.0)
    assert joined.bend_batch_size == pytest.approx(16, rel=0.1)  # refitted: a floor, a line
    assert joined.launch_bound_up_to is None
    assert joined.predict_iteration_ms(32) == pytest.approx(15.0, rel=models.tolerance)
    assert joined.predict_iteration_ms(8) == pytest.approx(9.0, rel=models.tolerance)
    drag_invariants(joined, [*SIZES, 32], [*times, 15.0])


def test_a_flat_curves_bridge_is_a_bend_where_the_samples_end() -> None:
    """Where no refit takes them (``_through`` directly): the floor, then the piece."""
    bridged = _through(profiled([9.0, 9.1, 8.9]).time, SIZES, 32, 15.0)
    assert bridged.shape == BEND and bridged.bend() == pytest.approx(16)
    assert (bridged(8), bridged(32), bridged(64)) == pytest.approx((9.0, 15.0, 27.0))


def test_a_measurement_below_the_samples_is_through_to_the_smallest() -> None:
    sizes = [8, 16, 32]
    times = [0.5 * n + 4 for n in sizes]
    models = profiled(times, sizes)
    joined = with_time_sample(models, sizes, times, 2, 3.0)  # faster per sample below 8
    assert joined.predict_iteration_ms(2) == pytest.approx(3.0)
    assert joined.predict_iteration_ms(8) == pytest.approx(8.0)
    assert joined.predict_iteration_ms(32) == pytest.approx(20.0)
    assert joined.measured_range == (2, 32)
    drag_invariants(joined, [2, *sizes], [3.0, *times])


def test_a_measurement_replaces_the_sample_at_its_size() -> None:
    times = [0.5 * n + 4 for n in SIZES]
    joined = with_time_sample(profiled(times), SIZES, times, 16, 12.5)
    assert joined.predict_iteration_ms(16) == pytest.approx(12.5, rel=0.06)
    assert joined.measured_range == (4, 16)


@pytest.mark.parametrize(("size", "ms", "why"), [
    (64, 10.0, "ran no slower than batch size 16"),  # less time than the curve says at 16
    # among the samples, far from the line through them: the host's pace, not the step's
    (12, 30.0, "no curve of the profile's kind goes near it and the other samples"),
    (2, 7.0, "ran no faster than batch size 4"),  # more time below the samples than at 4
])
def test_a_measurement_that_no_curve_can_take_is_refused(size: int, ms: float, why: str) -> None:
    times = [0.5 * n + 4 for n in SIZES]
    with pytest.raises(NotJoined, match=why):
        with_time_sample(profiled(times), SIZES, times, size, ms)


def test_a_profile_without_a_curve_to_drag_joins_nothing() -> None:
    times = [0.5 * n + 4 for n in SIZES]
    off = PerformanceModels.from_samples(SIZES, times, [1, 2, 3], 64 * GIB, "out of memory at 32")
    off.can_manipulate, off.reason = False, "out of memory at 32"
    with pytest.raises(NotJoined, match="out of memory at 32"):
        with_time_sample(off, SIZES, times, 64, 36.0)


def test_a_size_that_raised_in_the_profile_and_ran_now_no_longer_ends_the_range() -> None:
    times = [0.5 * n + 4 for n in SIZES]
    models = profiled(times, fails_at=100)
    assert models.max_batch_size() == 99
    joined = with_time_sample(models, SIZES, times, 120, 64.0)
    assert joined.fails_at is None and joined.max_batch_size() == EXTRAPOLATION_LIMIT * 120


def test_the_tolerance_the_samples_were_fitted_with_travels_in_the_report() -> None:
    times = [0.5 * n + 4 for n in SIZES]
    models = profiled(times, tolerance=0.11)
    assert PerformanceModels.from_dict(models.to_dict()).tolerance == 0.11
    older = {k: v for k, v in models.to_dict().items() if k != "tolerance"}
    assert PerformanceModels.from_dict(older).tolerance == 0.06

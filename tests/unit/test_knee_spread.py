"""How firmly the samples place the knee (``knee.knee_spread``): the knees of the curves fitted
with each measured size left out in turn, under the profile's own rules. The knee of a line
lies near 9.5·fixed cost/slope, so one sample timed while the host's pace moved can move it
several-fold; the range says so where the point alone would look exact."""

from __future__ import annotations

import pytest

from skyline_nb.models.joined import with_time_sample
from skyline_nb.models.knee import knee_spread, read_spread
from skyline_nb.models.performance import PerformanceModels

SIZES = [8, 16, 32, 64, 128]
MEMORY = [10_000_000 + 50_000 * n for n in SIZES]


def fitted(times: list[float], sizes: list[int] = SIZES) -> PerformanceModels:
    return PerformanceModels.from_samples(sizes, times, MEMORY[:len(sizes)], 1 << 30,
                                          tolerance=0.1)


def test_samples_on_one_line_place_the_knee_within_a_batch() -> None:
    models = fitted([2.0 + 0.25 * n for n in SIZES])  # knee ≈ 9.5 · 2 / 0.25 = 76
    assert models.can_manipulate and models.knee_batch_size is not None
    low, high = models.knee_range
    assert low <= models.knee_batch_size <= high and high - low <= 1
    assert 70 <= models.knee_batch_size <= 80


def test_one_sample_off_the_line_widens_the_range_around_the_knee() -> None:
    line = [2.0 + 0.25 * n for n in SIZES]
    line[-1] *= 1.08  # the largest timed 8 % slow: within the tolerance, the drag stays on
    models = fitted(line)
    assert models.can_manipulate, models.reason
    low, high = models.knee_range
    assert high is not None and low <= models.knee_batch_size <= high
    assert high / low > 1.5  # leaving the slow one out moves the knee that far


def test_three_sizes_leave_lines_through_two_and_fewer_say_nothing() -> None:
    # ½×, 1× and 2× a batch of 16, as a CPU profile often samples: 4 % of noise each way
    models = fitted([5.0 * 1.04, 9.0 * 0.96, 17.0 * 1.04], [8, 16, 32])
    low, high = models.knee_range
    assert high is not None and low <= models.knee_batch_size <= high and high > 1.25 * low
    assert knee_spread([8, 16], [5.0, 9.0], 0.1, 1, 256, 20) is None
    assert knee_spread([8, 16, 32, 64], [4.0, 6.0, 10.0, 18.0], 0.1, 1, 512, None) is None


def test_a_curve_without_a_knee_in_the_range_leaves_the_top_open() -> None:
    # a fixed cost of 60 ms: the knee lies near 9.5 · 60 / 0.25 = 2280, far past 8 × 128;
    # the largest timed fast pulls the line with it out down to a knee within the range
    times = [60.0 + 0.25 * n for n in SIZES]
    times[-1] = 60.0 + 0.25 * 128 * 4
    low, high = knee_spread(SIZES, times, 0.1, 1, 1024, 200)
    assert high is None and low <= 200


def test_the_range_goes_to_json_and_back_and_old_reports_have_none() -> None:
    models = fitted([2.0 + 0.25 * n for n in SIZES])
    data = models.to_dict()
    assert data["knee_range"] == list(models.knee_range)
    assert PerformanceModels.from_dict(data).knee_range == models.knee_range
    del data["knee_range"]
    assert PerformanceModels.from_dict(data).knee_range is None
    assert read_spread([12, None]) == (12, None)


@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_a_measurement_that_joins_the_samples_places_the_knee_anew(noise: float) -> None:
    times = [(2.0 + 0.25 * n) * (1 + noise * (-1) ** i) for i, n in enumerate(SIZES)]
    models = fitted(times)
    joined = with_time_sample(models, SIZES, times, 512, (2.0 + 0.25 * 512) * 1.3)
    assert joined.knee_range is not None
    low, high = joined.knee_range
    assert low <= joined.knee_batch_size <= (high or joined.max_batch_size())

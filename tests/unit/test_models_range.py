"""The bottom of the drag range: above the largest size below the samples where the user's code
raised (``fails_below``), as the top stops below ``fails_at``. Exact arithmetic on given
samples: the sizes and the lines are the test's own."""

from __future__ import annotations

import json
import math

from skyline_nb.models.performance import PerformanceModels

GIB = 1 << 30
SIZES = [8, 16, 32]


def proportional(**bounds: int) -> PerformanceModels:
    """Time proportional to the batch (a tiny fixed cost): the throughput is the same at every
    size, so without a bound the knee is 1 and the most throughput is at batch 1 too."""
    return PerformanceModels.from_samples(
        SIZES, [0.5 * x + 1e-3 for x in SIZES], [1000 * x + 5000 for x in SIZES], GIB, **bounds)


def test_a_size_refused_below_the_samples_starts_the_range_above_it() -> None:
    free, bounded = proportional(), proportional(fails_below=4)
    assert free.can_manipulate and bounded.can_manipulate
    assert free.min_batch_size() == 1 and bounded.min_batch_size() == 5
    assert free.knee_batch_size == 1 and bounded.knee_batch_size == 5
    assert bounded.turns(bounded.max_batch_size()) == [5.0, 256.0]
    # what scripts ask for stays in the range, however little
    assert bounded.batch_size_for_memory(0) == 5 and bounded.batch_size_for_memory(1e4) == 5
    assert bounded.batch_size_for_throughput(math.nan) == 5
    assert bounded.batch_size_for_throughput(1.0) == 5
    assert bounded.batch_size_for_memory(1000 * 100 + 5000) == 100  # inside: as before
    # the most throughput is taken over [5, 256]: at 5 it is below batch 1's
    assert bounded.max_throughput <= free.max_throughput
    assert bounded.max_throughput == max(bounded.predict_throughput(x) for x in (5, 256))
    assert bounded.max_batch_size() == free.max_batch_size() == 256  # the top is untouched


def test_both_ends_at_once() -> None:
    models = proportional(fails_below=6, fails_at=40)
    assert (models.min_batch_size(), models.max_batch_size()) == (7, 39)
    assert models.batch_size_for_memory(math.inf) == 39
    assert models.batch_size_for_memory(-math.inf) == 7


def test_a_refusal_within_the_measured_sizes_turns_the_drag_off() -> None:
    """A hand-edited or inconsistent report: a size that ran cannot sit below one that raised."""
    models = proportional(fails_below=8)
    assert not models.can_manipulate
    assert models.reason == "the measured batch size 8 is below a size where the code raised (8)"


def test_written_only_where_a_size_failed_and_read_back() -> None:
    assert "fails_below" not in proportional().to_dict()  # older reports read alike
    models = proportional(fails_below=4)
    data = json.loads(json.dumps(models.to_dict(), allow_nan=False))
    assert data["fails_below"] == 4
    back = PerformanceModels.from_dict(data)
    assert back == models and back.min_batch_size() == 5

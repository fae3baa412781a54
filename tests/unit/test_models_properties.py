"""Properties of the performance models (hypothesis).

Hand-given lines: the inverses, clamps and the knee for any coefficients. Sample sets: for any
measured batch sizes with noise, outliers and stalls, whenever ``can_manipulate`` is true every
invariant a report promises holds over the whole drag range (``impossible_values`` checks the
same on reports; here they are checked on the models alone, with more cases).
"""

from __future__ import annotations

import itertools
import json
import math
import sys

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skyline_nb.models.knee import place_knee
from skyline_nb.models.performance import (
    EXTRAPOLATION_LIMIT,
    FLAT_EXTRAPOLATION_LIMIT,
    KNEE_GAIN,
    MAX_BATCH_SIZE,
    LinearFit,
    PerformanceModels,
)

# Ranges wide enough for a tiny MLP on a CPU and a large model on a GPU: ms per sample,
# fixed ms per iteration, bytes per sample, fixed bytes (weights, optimizer state).
slopes_ms = st.floats(1e-4, 1e3)
intercepts_ms = st.floats(1e-3, 1e4)
slopes_bytes = st.floats(1.0, 1e10)
intercepts_bytes = st.floats(0.0, 1e11)
capacities = st.integers(1, 1 << 40)


def build(a: float, b: float, c: float, d: float, capacity: int,
          measured: tuple[int, int] = (1, MAX_BATCH_SIZE)) -> PerformanceModels:
    models = PerformanceModels(LinearFit(a, b, 1.0), LinearFit(c, d, 1.0), capacity, True,
                               measured_range=measured)
    place_knee(models, [], [])  # lines without samples: no spread
    return models


@settings(max_examples=300, deadline=None)
@given(slopes_ms, intercepts_ms, slopes_bytes, intercepts_bytes, capacities, st.data())
def test_inverse_of_prediction_returns_the_batch_size(
    a: float, b: float, c: float, d: float, capacity: int, data: st.DataObject
) -> None:
    models = build(a, b, c, d, capacity)
    x = data.draw(st.integers(1, min(models.max_batch_size(), 10**6)), label="batch size")
    assert models.batch_size_for_memory(models.predict_peak_bytes(x)) == x
    # Near the asymptote 1000/a the inversion cancels digits: t·a → 1000 loses about
    # log10(a·x/b) of the 16 digits, so allow the rounding that costs (and exact otherwise).
    slack = x * (a * x + b) / b * 1e-13
    assert abs(models.batch_size_for_throughput(models.predict_throughput(x)) - x) <= slack + 0.5


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e3, 1e3),
    st.floats(-1e4, 1e4),
    st.floats(-1e10, 1e10),
    st.floats(-1e11, 1e11),
    st.integers(-10, 1 << 40),
    st.integers(1, 1 << 30),
    st.floats(allow_nan=True, allow_infinity=True),
)
def test_inverses_are_clamped_for_any_coefficients_and_targets(
    a: float, b: float, c: float, d: float, capacity: int, largest: int, target: float
) -> None:
    models = build(a, b, c, d, capacity, (1, largest))
    top = models.max_batch_size()
    reach = FLAT_EXTRAPOLATION_LIMIT if models.time.shape == "flat" else EXTRAPOLATION_LIMIT
    assert 1 <= top <= min(MAX_BATCH_SIZE, reach * largest)
    json.dumps(models.to_dict(), allow_nan=False)  # strict JSON whatever the coefficients
    for answer in (models.batch_size_for_throughput(target), models.batch_size_for_memory(target)):
        assert isinstance(answer, int) and 1 <= answer <= top
    if c > 0 and capacity > 0 and top < min(MAX_BATCH_SIZE, reach * largest):
        assert top == 1 or models.predict_peak_bytes(top) <= capacity * (1 + 1e-12)
        assert models.predict_peak_bytes(top + 1) > capacity * (1 - 1e-12)


@settings(max_examples=300, deadline=None)
@given(slopes_ms, intercepts_ms, slopes_bytes, intercepts_bytes, capacities)
def test_knee_is_where_doubling_stops_paying(
    a: float, b: float, c: float, d: float, capacity: int
) -> None:
    models = build(a, b, c, d, capacity)
    knee = models.knee_batch_size
    if knee is None:
        bound = b * (1 - KNEE_GAIN) / (2 * KNEE_GAIN * a)
        assert bound >= models.max_batch_size() - 1
        return
    assert 1 <= knee <= models.max_batch_size()
    ratio = models.predict_throughput(2 * knee) / models.predict_throughput(knee)
    assert ratio < 1 + KNEE_GAIN + 1e-12
    if knee > 1:
        before = models.predict_throughput(2 * knee - 2) / models.predict_throughput(knee - 1)
        assert before >= 1 + KNEE_GAIN - 1e-12


@settings(max_examples=200, deadline=None)
@given(
    slopes_ms,
    intercepts_ms,
    slopes_bytes,
    intercepts_bytes,
    st.lists(st.integers(1, 4096), min_size=3, max_size=8, unique=True),
)
def test_fits_of_exact_lines_are_exact(
    a: float, b: float, c: float, d: float, sizes: list[int]
) -> None:
    assume(max(sizes) > min(sizes))
    # Exact samples have no noise: a tolerance of 1e-9 keeps any growth from looking flat.
    models = PerformanceModels.from_samples(
        sizes, [a * x + b for x in sizes], [c * x + d for x in sizes], 1 << 50, tolerance=1e-9
    )
    assert models.can_manipulate and models.time.shape == "line"
    # a slope through two sizes `gap` apart carries the rounding of values as large as the
    # largest sample: a 64 GiB intercept over sizes 7 apart is 2e-6 off (hypothesis found it)
    gap = min(y - x for x, y in itertools.pairwise(sorted(sizes)))
    for slope, (k, m) in ((models.time.slope, (a, b)), (models.memory.slope, (c, d))):
        rounding = 4 * sys.float_info.epsilon * (k * max(sizes) + m) / gap
        assert abs(slope - k) <= 1e-6 * k + rounding
    scale = max(abs(b), a * max(sizes))
    assert abs(models.time.intercept - b) <= 1e-9 * scale
    assert models.max_batch_size() == min(8 * max(sizes), models._capacity_limit(models.memory))
    assert PerformanceModels.from_dict(models.to_dict()) == models


# ---- measured sample sets ---------------------------------------------------------------------
@st.composite
def sample_sets(draw: st.DrawFn) -> dict:
    """Batch sizes with times on a line plus noise, sometimes one far-off sample (a stall or a
    fast first run), sometimes flat or falling; peaks likewise; a capacity from none to 1000×
    the largest measured peak, a real bound or not."""
    sizes = draw(st.lists(st.integers(1, 2048), min_size=3, max_size=7, unique=True))
    a, b = draw(st.floats(-0.5, 50.0)), draw(st.floats(-20.0, 200.0))
    c, d = draw(st.floats(-1e4, 1e8)), draw(st.floats(-1e6, 1e10))
    level = draw(st.floats(0.0, 0.3))  # relative noise on every sample
    times = [max(1e-3, (a * x + b) * (1 + draw(st.floats(-level, level)))) for x in sizes]
    if draw(st.booleans()):
        odd = draw(st.integers(0, len(sizes) - 1))
        times[odd] *= draw(st.floats(0.05, 20.0))
    peaks = [max(0.0, c * x + d + draw(st.floats(-1e5, 1e5))) for x in sizes]
    return {
        "sizes": sizes, "times": times, "peaks": peaks,
        "capacity": int(max(peaks) * draw(st.floats(0.0, 1e3))),
        "memory_bound": draw(st.booleans()),
    }


@settings(max_examples=400, deadline=None)
@given(sample_sets())
def test_whenever_dragging_is_on_every_invariant_holds(s: dict) -> None:
    models = PerformanceModels.from_samples(
        s["sizes"], s["times"], s["peaks"], s["capacity"], memory_bound=s["memory_bound"]
    )
    json.dumps(models.to_dict(), allow_nan=False)
    assert PerformanceModels.from_dict(models.to_dict()) == models
    if not models.can_manipulate:
        assert models.reason and models.max_throughput is None
        return
    top = models.max_batch_size()
    largest = max(s["sizes"])
    assert largest <= top <= EXTRAPOLATION_LIMIT * largest
    if s["memory_bound"]:
        assert models.predict_peak_bytes(top) <= s["capacity"] * (1 + 1e-12)
    checked = sorted({1, 2, top // 3, top // 2, top - 1, top, *s["sizes"]} - {0})
    times = [models.predict_iteration_ms(x) for x in checked]
    throughputs = [models.predict_throughput(x) for x in checked]
    peaks = [models.predict_peak_bytes(x) for x in checked]
    for values in (times, throughputs, peaks):
        assert all(math.isfinite(v) and v > 0 for v in values)
    # Larger batch: more time and more memory. The throughput may fall (time per sample
    # growing with the batch), but the maximum shown is the most anywhere in the range. The
    # memory curve's pieces meet where a sample is: one piece's slope·x + intercept may land an
    # ulp above the next one's there (hypothesis: 1.0000004860000002 then 1.000000486), so its
    # peaks never fall beyond float rounding, as in test_memory_curve_properties.
    assert times == sorted(times)
    assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(peaks))
    measured = [1000.0 * x / t for x, t in zip(s["sizes"], s["times"], strict=True)]
    assert models.max_throughput >= max(measured) and math.isfinite(models.max_throughput)
    assert all(models.max_throughput >= t * (1 - 1e-12) for t in throughputs)
    # The line stays within 1.25× of every sample: the user's own batch is predicted sanely.
    for x, t in zip(s["sizes"], s["times"], strict=True):
        assert 1 / 1.25 <= models.predict_iteration_ms(x) / t <= 1.25
    knee = models.knee_batch_size
    assert knee is None or 1 <= knee <= top


@settings(max_examples=300, deadline=None)
@given(slopes_ms, intercepts_ms, slopes_bytes, intercepts_bytes, capacities,
       st.floats(0.0, 1e13), st.floats(0.0, 1e13))
def test_inverses_are_monotone_in_the_target(
    a: float, b: float, c: float, d: float, capacity: int, low: float, high: float
) -> None:
    """A larger target throughput or peak never gives a smaller batch size."""
    models = build(a, b, c, d, capacity, (1, 4096))
    low, high = sorted((low, high))
    assert models.batch_size_for_memory(low) <= models.batch_size_for_memory(high)
    assert models.batch_size_for_throughput(low) <= models.batch_size_for_throughput(high)

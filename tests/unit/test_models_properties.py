"""Properties of the performance models for any positive coefficients (hypothesis)."""

from __future__ import annotations

import json
import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skyline_nb.models.linear import KNEE_GAIN, MAX_BATCH_SIZE, LinearFit, PerformanceModels

# Ranges wide enough for a tiny MLP on a CPU and a large model on a GPU: ms per sample,
# fixed ms per iteration, bytes per sample, fixed bytes (weights, optimizer state).
slopes_ms = st.floats(1e-4, 1e3)
intercepts_ms = st.floats(1e-3, 1e4)
slopes_bytes = st.floats(1.0, 1e10)
intercepts_bytes = st.floats(0.0, 1e11)
capacities = st.integers(1, 1 << 40)


def build(a: float, b: float, c: float, d: float, capacity: int) -> PerformanceModels:
    models = PerformanceModels(LinearFit(a, b, 1.0), LinearFit(c, d, 1.0), capacity, True)
    models.knee_batch_size = models._knee()
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
    st.floats(allow_nan=True, allow_infinity=True),
)
def test_inverses_are_clamped_for_any_coefficients_and_targets(
    a: float, b: float, c: float, d: float, capacity: int, target: float
) -> None:
    models = build(a, b, c, d, capacity)
    top = models.max_batch_size()
    assert 1 <= top <= MAX_BATCH_SIZE
    json.dumps(models.to_dict(), allow_nan=False)  # strict JSON whatever the coefficients
    for answer in (models.batch_size_for_throughput(target), models.batch_size_for_memory(target)):
        assert isinstance(answer, int) and 1 <= answer <= top
    if c > 0 and capacity > 0 and top < MAX_BATCH_SIZE:
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
    models = PerformanceModels.from_samples(
        sizes, [a * x + b for x in sizes], [c * x + d for x in sizes], 1 << 50
    )
    assert models.can_manipulate
    assert math.isclose(models.time.slope, a, rel_tol=1e-6)
    assert math.isclose(models.memory.slope, c, rel_tol=1e-6)
    scale = max(abs(b), a * max(sizes))
    assert abs(models.time.intercept - b) <= 1e-9 * scale
    assert PerformanceModels.from_dict(models.to_dict()) == models

"""Properties of the memory curve in pieces (models/memory_curve.py), for any phases that grow in
lines with steps (a GPU library picking another kernel past some batch size): exact at every
sample, never falling, its inverse the largest batch size that fits, its phase the one whose
own peak is the curve there, and a report round trip that changes nothing."""

from __future__ import annotations

import itertools
import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skyline_nb.models.curve import Curve
from skyline_nb.models.memory_curve import fit_memory

PHASES = ("forward", "loss", "backward", "optimizer")


@st.composite
def stepped_phases(draw: st.DrawFn) -> tuple[list[int], list[dict[str, float]]]:
    """Sampled sizes, and each sample's peak per phase: a line in the batch plus, for some
    phases, a jump from some batch size on."""
    sizes = sorted(draw(st.lists(st.integers(1, 4096), min_size=2, max_size=7, unique=True)))
    names = draw(st.lists(st.sampled_from(PHASES), min_size=1, max_size=4, unique=True))
    shapes = {name: (draw(st.floats(0.0, 1e7)), draw(st.floats(0.0, 1e9)),
                     draw(st.integers(1, 4096)), draw(st.sampled_from([0.0, 1e3, 1e6, 1e8])))
              for name in names}

    def peak(name: str, x: int) -> float:
        slope, intercept, at, jump = shapes[name]
        return slope * x + intercept + (jump if x >= at else 0.0)

    return sizes, [{name: peak(name, x) for name in names} for x in sizes]


@settings(max_examples=300, deadline=None)
@given(stepped_phases())
def test_the_curve_is_exact_at_every_sample_and_never_falls(case) -> None:
    sizes, phases = case
    peaks = [max(p.values()) for p in phases]
    curve = fit_memory(sizes, peaks, phases)
    for x, peak in zip(sizes, peaks, strict=True):
        assert math.isclose(curve(x), peak, rel_tol=1e-9, abs_tol=1e-3)
        holder = curve.line_at(x).phase
        at_x = phases[sizes.index(x)]
        assert math.isclose(at_x[holder], peak, rel_tol=1e-9, abs_tol=1e-3)
    grid = sorted({1.0, *map(float, sizes), *(a + (b - a) / 3 for a, b in
                                              itertools.pairwise(sizes)),
                   16.0 * sizes[-1]})
    values = [curve(x) for x in grid]
    assert all(b >= a - 1e-9 * abs(a) - 1e-3 for a, b in itertools.pairwise(values))
    again = Curve.from_dict(curve.to_dict())
    assert again.lines == curve.lines and again(grid[-1]) == curve(grid[-1])


@settings(max_examples=300, deadline=None)
@given(stepped_phases(), st.floats(0.0, 1.0))
def test_the_inverse_is_the_largest_batch_size_whose_peak_fits(case, where: float) -> None:
    sizes, phases = case
    peaks = [max(p.values()) for p in phases]
    curve = fit_memory(sizes, peaks, phases)
    low, high = curve(1.0), curve(16.0 * sizes[-1])
    assume(high > low * (1 + 1e-6))
    y = low + where * (high - low)
    x = curve.inverse(y)
    tolerance = abs(y) * 1e-9 + 1e-3
    if x == math.inf:  # nothing grows beyond the samples and the curve there fits
        assert curve.slope <= 0 and curve(16.0 * sizes[-1]) <= y + tolerance
        return
    assert curve(x) <= y + tolerance
    if curve(x + 1.0) - curve(x) > abs(y) * 1e-12:  # a growth that floats can show
        step = max(1e-6 * abs(x), 1e-6)
        assert curve(x + step) > y or curve(x + 1.0) > y  # nothing beyond it fits

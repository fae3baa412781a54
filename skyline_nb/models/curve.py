"""Curves that are the maximum of a few lines, fitted to a training step's measured samples.

Why a maximum of lines (a convex, piecewise-linear curve): the iteration time of a model that
is launch-bound at small batches is flat (the host launching kernels) and then grows in a
straight line once the device is busy, T(b) = max(T_floor, α + β·b), the hinge Pollux/AdaptDL
and XSP describe; on a CPU the time per sample of a CNN grows with the batch past a cache or
allocator threshold, a steeper line taking over. Peak memory is the largest of several phases,
each growing in a straight line with the batch: again a maximum of lines. One form covers the
four shapes, each evaluated, inverted and drawn the same way here and in js/src/predict.js:

- ``flat``: one line of slope 0 (time that does not grow over the samples: launch-bound);
- ``line``: one line (Skyline's R(x) = a·x + b);
- ``bend``: a floor and a line (the hinge; ``bend()`` is where they meet);
- ``convex``: two lines or more, each steeper than the one before.

``fit_time`` chooses the simplest shape whose every sample lies within ``tolerance`` of it
(relative), so a straight line is kept wherever it describes the samples, and a bend or a
steeper segment appears only where the samples show one beyond their noise.

A line may hold over a stretch of x only (``start``/``end``): the curve is then the largest of
the lines that hold at x. Memory curves are made of such pieces (``memory_curve.fit_memory``):
a GPU's peak can step where a library picks another kernel, which no maximum of lines through
the samples follows; and a time curve is, where its smallest sample lies a little below the
line through the others (``trust._steep_start``: a piece up to the second smallest, then that
line).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skyline_nb.models.fit import LinearFit, _points

FLAT, LINE, BEND, CONVEX = "flat", "line", "bend", "convex"
SHAPES = (FLAT, LINE, BEND, CONVEX)
# Default relative tolerance of ``fit_time``: a shape is kept when every sample is within 6 %
# of it (repeated CPU samples of one size agree within 2–5 %; BENCHMARKS.md).
TOLERANCE = 0.06
# A growing curve explaining less than this share of how the time varies is not drawn while a
# richer shape explains it (the trust rules refuse it too: trust.py).
MIN_R2 = 0.95


@dataclass(frozen=True)
class Line:
    slope: float
    intercept: float
    # the phase of the step whose peak this memory line follows (``fit_memory``), else None
    phase: str | None = None
    # where the line holds (inclusive; None: unbounded that way)
    start: float | None = None
    end: float | None = None

    def __call__(self, x: float) -> float:
        return self.slope * x + self.intercept

    def holds_at(self, x: float) -> bool:
        return (self.start is None or self.start <= x) and (self.end is None or x <= self.end)


@dataclass
class Curve:
    """y(x) = max over the ``lines`` that hold at x of slope·x + intercept. Lines that hold
    everywhere are sorted by slope, each of them the largest somewhere; lines over stretches
    are sorted by where they start, the ones that hold up to infinity last, by slope. So the
    last line is the steepest of those that decide large x. ``r2`` and ``residuals``
    (measured − curve) over the samples the curve was fitted to; R² is centred on their mean,
    so a flat curve scores 0."""

    lines: list[Line]
    r2: float = 1.0
    residuals: list[float] = field(default_factory=list)
    shape: str = LINE

    @classmethod
    def of_line(cls, fit: LinearFit) -> Curve:
        shape = FLAT if fit.slope == 0 else LINE
        return cls([Line(fit.slope, fit.intercept)], fit.r2, list(fit.residuals), shape)

    def __call__(self, x: float) -> float:
        return max(line(x) for line in self._holding(x))

    def _holding(self, x: float) -> list[Line]:
        return [line for line in self.lines if line.holds_at(x)] or self.lines

    @property
    def pieces(self) -> bool:
        """Whether some line holds over a stretch only."""
        return any(line.start is not None or line.end is not None for line in self.lines)

    @property
    def slope(self) -> float:
        """The last line's slope: how fast y grows for large x (time: 1/asymptotic rate)."""
        return self.lines[-1].slope

    @property
    def intercept(self) -> float:
        return self.lines[-1].intercept

    def breakpoints(self) -> list[float]:
        """Where each line hands over to the next, steeper one (increasing)."""
        return [(a.intercept - b.intercept) / (b.slope - a.slope)
                for a, b in zip(self.lines, self.lines[1:], strict=False)]

    def bend(self) -> float | None:
        """Where a ``bend`` curve's floor meets its line; None for other shapes."""
        return self.breakpoints()[0] if self.shape == BEND else None

    def line_at(self, x: float) -> Line:
        """The line that is the curve at x (the steeper one at a breakpoint)."""
        holding = self._holding(x)
        best = holding[0]
        for line in holding[1:]:
            if line(x) >= best(x):
                best = line
        return best

    def phases_near(self, x: float, share: float) -> list[str]:
        """The phase of the line that is the curve at x (``line_at``), then those of the others
        holding there within ``share`` (relative) of it, the higher first: lines that close
        are one peak as far as the samples tell. Empty when the lines carry no phase."""
        top = self.line_at(x)
        y = top(x)
        near = [line for line in self._holding(x)
                if line is not top and line(x) >= y - share * abs(y)]
        lines = [top, *sorted(near, key=lambda line: -line(x))]
        return list(dict.fromkeys(line.phase for line in lines if line.phase is not None))

    def inverse(self, y: float) -> float:
        """The largest x with curve(x) ≤ y: min over growing lines of (y − intercept)/slope.

        −inf when a line that does not grow already exceeds y (no x fits), +inf when none
        grows and none exceeds it, nan when y is nan (callers clamp).
        """
        if math.isnan(y):
            return math.nan
        if self.pieces:
            return self._inverse_of_pieces(y)
        if any(line.slope <= 0 and line.intercept > y for line in self.lines):
            return -math.inf
        growing = [(y - line.intercept) / line.slope for line in self.lines if line.slope > 0]
        return min(growing) if growing else math.inf

    def _inverse_of_pieces(self, y: float) -> float:
        """``inverse`` where lines hold over stretches (the curve never falls: ``fit_memory``):
        +inf when nothing grows past the last stretch and the curve there is ≤ y; else the
        largest of the stretches' ends and of the lines' crossings of y within their
        stretches where the curve is ≤ y; −inf when there is none."""
        ends = sorted({v for line in self.lines for v in (line.start, line.end) if v is not None})
        last = ends[-1]
        if self(last) <= y and all(line.slope <= 0 for line in self.lines if line.end is None):
            return math.inf
        candidates = list(ends)
        for line in self.lines:
            if line.slope > 0:
                x = (y - line.intercept) / line.slope
                if line.holds_at(x):
                    candidates.append(x)
        # rounding: a line evaluated at its own crossing of y lands within ulps of its terms
        slack = 1e-12 * max(1.0, abs(y), *(abs(line.intercept) for line in self.lines))
        below = [x for x in candidates if self(x) <= y + slack]
        return max(below) if below else -math.inf

    def to_dict(self) -> dict[str, Any]:
        """The lines, plus the steepest one's ``slope`` and ``intercept`` (the asymptote; the
        only line a report from before curves had)."""
        return {
            "lines": [{"slope": line.slope, "intercept": line.intercept,
                       **({"phase": line.phase} if line.phase else {}),
                       **({"from": line.start} if line.start is not None else {}),
                       **({"to": line.end} if line.end is not None else {})}
                      for line in self.lines],
            "shape": self.shape,
            "slope": self.slope,
            "intercept": self.intercept,
            "r2": self.r2,
            "residuals": list(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Curve:
        """Read ``to_dict``; a dict without ``lines`` (an older report) is its one line."""
        residuals = [float(r) for r in data.get("residuals", [])]
        if "lines" not in data:
            return cls.of_line(LinearFit(float(data["slope"]), float(data["intercept"]),
                                         float(data["r2"]), residuals))
        lines = [Line(float(item["slope"]), float(item["intercept"]),
                      item["phase"] if isinstance(item.get("phase"), str) else None,
                      _bound(item.get("from")), _bound(item.get("to")))
                 for item in data["lines"]]
        if not lines:
            raise ValueError("a curve needs at least one line")
        shape = data.get("shape", LINE)
        return cls(lines, float(data["r2"]), residuals, shape if shape in SHAPES else LINE)


def _bound(value: Any) -> float | None:
    return None if value is None else float(value)


def _finish(lines: list[Line], shape: str, x: np.ndarray, y: np.ndarray,
            envelope: bool = True) -> Curve:
    """The curve of ``lines`` (only those that are the maximum somewhere, when ``envelope``:
    lines that hold everywhere), with its fit to the samples (x, y)."""
    curve = Curve(_upper_envelope(lines) if envelope else lines, shape=shape)
    residuals = y - np.array([curve(v) for v in x])
    total = float(np.sum((y - y.mean()) ** 2))
    curve.r2 = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 1.0
    curve.residuals = [float(r) for r in residuals]
    return curve


def _upper_envelope(lines: list[Line]) -> list[Line]:
    """The lines that are the maximum somewhere (for x > 0), sorted by slope."""
    kept: list[Line] = []
    for line in sorted(lines, key=lambda v: (v.slope, v.intercept)):
        while kept and kept[-1].slope == line.slope:
            kept.pop()  # same slope: the higher intercept (sorted last) wins
        while len(kept) >= 2 and _crossing(kept[-2], line) <= _crossing(kept[-2], kept[-1]):
            kept.pop()  # the middle line is never above both neighbours
        kept.append(line)
    while len(kept) >= 2 and _crossing(kept[0], kept[1]) <= 0:
        kept.pop(0)  # a line that leads only at x ≤ 0 never matters for a batch size
    return kept


def _crossing(a: Line, b: Line) -> float:
    return (a.intercept - b.intercept) / (b.slope - a.slope)


def _groups(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct x (sorted) and the mean y at each."""
    xs = np.unique(x)
    return xs, np.array([float(y[x == v].mean()) for v in xs])


def _line(xs: np.ndarray, ys: np.ndarray) -> Line:
    fit = LinearFit.fit(xs, ys)
    return Line(fit.slope, fit.intercept)


def _time_candidates(xs: np.ndarray, ys: np.ndarray) -> list[tuple[int, str, list[Line]]]:
    """Every shape the grouped samples allow, with its number of parameters (how simple it
    is): flat (1); one line (2); a floor and a line (3); two lines (4); a floor and two lines
    (5); a chord between each two neighbours (2 per chord). A floor rests on two sizes or more
    (one point is no evidence that the time stops falling below it); two lines share the size
    where one hands over to the other, so three sizes can show a steepening (a CPU past its
    caches)."""
    n = len(xs)
    found: list[tuple[int, str, list[Line]]] = [(1, FLAT, [Line(0.0, float(ys.mean()))])]
    if n >= 2:
        found.append((2, LINE, [_line(xs, ys)]))
    for i in range(2, n - 1):  # floor on xs[:i], line on xs[i:]
        found.append((3, BEND, _floor_and_line(xs, ys, i)))
    for i in range(1, n - 1):  # line on xs[:i+1], steeper line on xs[i:]
        found.append((4, CONVEX, [_line(xs[:i + 1], ys[:i + 1]), _line(xs[i:], ys[i:])]))
    for i in range(2, n - 2):
        for j in range(i + 1, n - 1):
            floor = Line(0.0, float(ys[:i].mean()))
            found.append((5, CONVEX, [floor, _line(xs[i:j + 1], ys[i:j + 1]),
                                      _line(xs[j:], ys[j:])]))
    if n >= 4:  # a chord between each two neighbours: any convex set of samples, exactly
        found.append((2 * (n - 1), CONVEX,
                      [_line(xs[k:k + 2], ys[k:k + 2]) for k in range(n - 1)]))
    return found


def _floor_and_line(xs: np.ndarray, ys: np.ndarray, i: int) -> list[Line]:
    """A ``bend``'s lines: the floor through the first ``i`` sizes, the line through the rest."""
    return [Line(0.0, float(ys[:i].mean())), _line(xs[i:], ys[i:])]


def fit_bends(xs: Sequence[float], ys: Sequence[float]) -> list[Curve]:
    """Every ``bend`` over the splits of the sizes into a floor (the smallest two or more) and
    a growing line (the rest), whichever side of the split the two meet, the least squared
    error first; empty when no split grows. ``trust.fit_time`` judges their floors and rises
    on their own where R² over all the samples refuses the curve ``fit_time`` drew: on a host
    whose pace moves, the least-squares split can follow one stray sample, where another
    split's pieces hold."""
    x, y = _points(xs, ys)
    gx, gy = _groups(x, y)
    found = [_finish(lines, BEND, x, y)
             for lines in (_floor_and_line(gx, gy, i) for i in range(2, len(gx) - 1))
             if lines[1].slope > 0 and _valid_time(lines, gx)]
    return sorted((c for c in found if len(c.lines) == 2), key=_squared_error)


def _valid_time(lines: list[Line], xs: np.ndarray) -> bool:
    """Time never falls as the batch grows, is positive at batch 1, and each piece of a
    multi-line shape is steeper than the one before (else it is not the shape it claims)."""
    slopes = [line.slope for line in lines]
    if any(s < 0 for s in slopes) or any(b <= a for a, b in itertools.pairwise(slopes)):
        return False
    return max(line(1.0) for line in lines) > 0 and max(line(float(xs[0])) for line in lines) > 0


def fit_time(xs: Sequence[float], ys: Sequence[float], tolerance: float = TOLERANCE) -> Curve:
    """The simplest curve (fewest parameters, ``_time_candidates``; the least squared error
    among equally simple ones) with every sample within ``tolerance`` of it, relative (flat:
    within half of it), and a growing one explaining at least ``MIN_R2`` of the variation (a
    line through a flat stretch and a rise can be within 6 % of three sizes and still miss
    the rise); when none is, the one with the least squared error.

    A straight line whose intercept comes out negative (time per sample growing a little
    with the batch) is replaced by the line through the origin, as least squares subject to
    a fixed cost ≥ 0 would draw it, unless a steeper segment describes the samples better;
    pieces that would reach negative time at batch 0 get the smallest sample's time per
    sample below it.
    """
    x, y = _points(xs, ys)
    if np.any(y <= 0):
        raise ValueError("iteration times must be positive")
    gx, gy = _groups(x, y)
    levels: dict[int, list[Curve]] = {}
    for level, shape, lines in _time_candidates(gx, gy):
        if shape == LINE and lines[0].intercept < 0:
            fit = LinearFit.through_origin(gx, gy)
            lines = [Line(fit.slope, 0.0)]
        elif max(line(0.0) for line in lines) < 0:
            # Steep pieces drawn back to batch 0 would cost negative time there: below the
            # smallest size, the time per sample measured there.
            lines = [Line(float(gy[0] / gx[0]), 0.0), *lines]
        if not _valid_time(lines, gx):
            continue
        curve = _finish(lines, shape, x, y)
        if len(curve.lines) < len(lines):
            continue  # a piece that is never the maximum: the simpler shape covers it
        levels.setdefault(level, []).append(curve)
    ranked = [(level, min(curves, key=_squared_error)) for level, curves in sorted(levels.items())]
    within: Curve | None = None  # the simplest curve within the tolerance
    for level, curve in ranked:  # the simplest level whose best fit keeps every sample within
        # Flat needs the times to vary by no more than the tolerance in all (half of it each
        # way): a slow steady growth (weights dominating a CPU MLP) is a line, not a floor.
        limit = tolerance / 2 if curve.shape == FLAT else tolerance
        close = max(abs(r) / v for r, v in zip(curve.residuals, y, strict=True)) <= limit
        # Past a simpler curve within the tolerance, a richer one with as many parameters as
        # sizes fits them exactly whatever they are: evidence only when the samples were
        # precise (the default tolerance: a quiet machine), never on a busy one.
        evidence = within is None or level < len(gx) or tolerance <= TOLERANCE
        if close and evidence and (curve.shape == FLAT or curve.r2 >= MIN_R2):
            return curve
        if close and within is None:
            within = curve
    if within is not None:
        return within  # explains too little: the trust rules say so
    return min((c for _, c in ranked), key=_squared_error)  # flat is always valid


def flat_time(xs: Sequence[float], ys: Sequence[float]) -> Curve:
    """The flat curve through the samples: their mean time (each size weighing once), as
    ``fit_time`` draws a ``flat`` shape."""
    x, y = _points(xs, ys)
    _, gy = _groups(x, y)
    return _finish([Line(0.0, float(gy.mean()))], FLAT, x, y)


def _squared_error(curve: Curve) -> float:
    return float(np.sum(np.square(curve.residuals)))

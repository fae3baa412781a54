"""Straight lines y = slope·x + intercept fitted to measured points, with residuals and R².

Three ways to draw the line, each for a reason given in its docstring: least squares (time),
through the origin (time whose fixed cost is below the noise), and through the two largest
sizes (peak memory, a maximum of lines). R² is always over all points and centred on their
mean, so it says how straight the samples were whichever line was drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def _points(xs: Sequence[float], ys: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be two sequences of the same length")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if np.unique(x).size < 2:
        raise ValueError("a line needs at least two distinct x values")
    return x, y


@dataclass
class LinearFit:
    """y = slope·x + intercept, with the residuals (measured − line) and R² of its points."""

    slope: float
    intercept: float
    r2: float
    residuals: list[float] = field(default_factory=list)

    @classmethod
    def _through(cls, x: np.ndarray, y: np.ndarray, slope: float, intercept: float) -> LinearFit:
        residuals = y - (slope * x + intercept)
        total = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 1.0
        return cls(float(slope), float(intercept), r2, [float(r) for r in residuals])

    @classmethod
    def fit(cls, xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
        """Ordinary least squares in closed form on centred x.

        Centring keeps the fit exact for exact lines even with byte-sized y values (10^10) and
        avoids ``np.polyfit``'s conditioning warnings, which the test suite turns into errors.
        """
        x, y = _points(xs, ys)
        dx = x - x.mean()
        slope = float(np.dot(dx, y - y.mean()) / np.dot(dx, dx))
        return cls._through(x, y, slope, float(y.mean() - slope * x.mean()))

    @classmethod
    def through_origin(cls, xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
        """Least squares with the intercept held at 0: slope = Σxy / Σx².

        For iteration time whose least-squares intercept came out negative: a negative fixed
        cost per iteration is impossible, and least squares with the intercept held at or
        above 0 (a convex problem) then has its optimum on that boundary, here.
        """
        x, y = _points(xs, ys)
        return cls._through(x, y, float(np.dot(x, y) / np.dot(x, x)), 0.0)

    @classmethod
    def upper_segment(cls, xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
        """The line through the points of the two largest x (y averaged per x).

        For peak memory: the peak is the largest of several phases whose bytes each grow in a
        straight line with the batch, so M(x) is a maximum of lines — convex, piecewise linear.
        Beyond the samples, where the widget predicts, the last segment is the right line;
        least squares over all points tilts towards earlier segments and under-predicts
        (BENCHMARKS.md, prediction accuracy). Below the
        second-largest sample the earlier segments lie above this line, so small batch sizes
        are under-estimated there; the widget predicts mostly upwards.
        """
        x, y = _points(xs, ys)
        x1, x2 = np.unique(x)[-2:]
        y1, y2 = float(y[x == x1].mean()), float(y[x == x2].mean())
        slope = (y2 - y1) / (x2 - x1)
        return cls._through(x, y, slope, y2 - slope * x2)

    def __call__(self, x: float) -> float:
        return self.slope * x + self.intercept

    def inverse(self, y: float) -> float:
        """x with line(x) = y; ±inf or nan when the slope is zero (callers clamp)."""
        if self.slope == 0:
            return math.nan if y == self.intercept else math.copysign(math.inf, y - self.intercept)
        return (y - self.intercept) / self.slope

    def to_dict(self) -> dict[str, Any]:
        return {
            "slope": self.slope,
            "intercept": self.intercept,
            "r2": self.r2,
            "residuals": list(self.residuals),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinearFit:
        return cls(
            slope=float(data["slope"]),
            intercept=float(data["intercept"]),
            r2=float(data["r2"]),
            residuals=[float(r) for r in data.get("residuals", [])],
        )

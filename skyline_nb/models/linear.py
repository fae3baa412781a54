"""Linear performance models of one training iteration: R(x) = a·x + b ms, M(x) = c·x + d bytes.

Pure numpy (no torch), so the report and the widget's maths can be checked without a device.
Skyline fitted the same two lines; its widget inverts them while the user drags a bar. The
widget's JavaScript mirrors ``predict_*``, ``batch_size_for_*``, ``max_batch_size`` and the knee
from the coefficients stored in the report, so both sides must keep the same formulas
(``tests/fixtures/models_cases.json`` holds Python's answers for the JS tests to compare with).

Known limitations: a line is what Skyline's widget drags along, but on CPU a Transformer's time
grows super-linearly far beyond the sampled range; residuals and R² are kept so the widget can
show how well the line fits the measured points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MIN_POINTS = 3
KNEE_GAIN = 0.05  # XSP's rule: doubling the batch buys less than 5 % more throughput
# Batch sizes are integers the JS side must hold exactly; a near-zero memory slope must not
# turn into a batch size of 10^300 (or an OverflowError in math.floor).
MAX_BATCH_SIZE = 2**31 - 1


@dataclass
class LinearFit:
    """y = slope·x + intercept by least squares, with its residuals and R²."""

    slope: float
    intercept: float
    r2: float
    residuals: list[float] = field(default_factory=list)

    @classmethod
    def fit(cls, xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
        """Ordinary least squares in closed form on centred x.

        Centring keeps the fit exact for exact lines even with byte-sized y values (10^10) and
        avoids ``np.polyfit``'s conditioning warnings, which the test suite turns into errors.
        """
        x = np.asarray(xs, dtype=float)
        y = np.asarray(ys, dtype=float)
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError("x and y must be two sequences of the same length")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("x and y must be finite")
        if x.size < 2 or np.ptp(x) == 0:
            raise ValueError("a line needs at least two distinct x values")
        dx = x - x.mean()
        slope = float(np.dot(dx, y - y.mean()) / np.dot(dx, dx))
        intercept = float(y.mean() - slope * x.mean())
        residuals = y - (slope * x + intercept)
        total = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 1.0
        return cls(slope, intercept, r2, [float(r) for r in residuals])

    @classmethod
    def upper_segment(cls, xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
        """The line through the points of the two largest x (y averaged per x).

        For peak memory: the peak is the largest of several phases whose bytes each grow in a
        straight line with the batch, so M(x) is a maximum of lines — convex, piecewise linear.
        Beyond the samples, where the widget predicts, the last segment is the right line;
        least squares over all points tilts towards earlier segments and under-predicts (seen:
        LSTM on CPU 1.32 % → 0.00 %, Transformer on an H100 3.23 % → 0.07 %). Below the
        second-largest sample the earlier segments lie above this line, so small batch sizes
        are under-estimated there; the widget predicts mostly upwards. Residuals and R² are over
        all points, so the widget still shows how straight the samples were.
        """
        x = np.asarray(xs, dtype=float)
        y = np.asarray(ys, dtype=float)
        if x.shape != y.shape or x.ndim != 1 or not (np.all(np.isfinite(x)) and
                                                     np.all(np.isfinite(y))):
            raise ValueError("x and y must be two finite sequences of the same length")
        distinct = np.unique(x)
        if distinct.size < 2:
            raise ValueError("a line needs at least two distinct x values")
        x1, x2 = distinct[-2], distinct[-1]
        y1, y2 = float(y[x == x1].mean()), float(y[x == x2].mean())
        slope = (y2 - y1) / (x2 - x1)
        intercept = y2 - slope * x2
        residuals = y - (slope * x + intercept)
        total = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 1.0
        return cls(float(slope), float(intercept), r2, [float(r) for r in residuals])

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


@dataclass
class PerformanceModels:
    """The fitted time and memory lines plus what the widget needs to drag with them.

    ``can_manipulate`` is false (and ``reason`` says why) when fewer than three distinct batch
    sizes were measured or a slope is not positive; the fits are still kept when they exist, so
    the widget can draw them beside the measured points.
    """

    time: LinearFit | None
    memory: LinearFit | None
    capacity_bytes: int
    can_manipulate: bool
    reason: str | None = None
    knee_batch_size: int | None = None

    @classmethod
    def from_samples(
        cls,
        batch_sizes: Sequence[int],
        iteration_ms: Sequence[float],
        peak_bytes: Sequence[int],
        capacity_bytes: int,
        reason: str | None = None,
    ) -> PerformanceModels:
        """Fit both lines; ``can_manipulate`` is false (with why) when a fit is unusable.

        Samples with a non-finite value, a batch size below 1 or a non-positive time cannot be
        measurements and are left out (``reason`` mentions it if that leaves too few points).
        ``reason`` from the sampler (e.g. "out of memory at 64") is kept when the fit fails.
        """
        if not len(batch_sizes) == len(iteration_ms) == len(peak_bytes):
            raise ValueError("batch_sizes, iteration_ms and peak_bytes differ in length")
        rows = [
            (float(x), float(t), float(m))
            for x, t, m in zip(batch_sizes, iteration_ms, peak_bytes, strict=True)
            if all(math.isfinite(float(v)) for v in (x, t, m)) and x >= 1 and t > 0 and m >= 0
        ]
        dropped = len(batch_sizes) - len(rows)
        distinct = len({x for x, _, _ in rows})
        if distinct < MIN_POINTS:
            why = f"only {distinct} batch size(s) could be measured; predictions need {MIN_POINTS}"
            if dropped:
                why += f" ({dropped} sample(s) had invalid values)"
            return cls(None, None, capacity_bytes, False, reason or why)
        xs, ts, ms = zip(*rows, strict=True)
        time = LinearFit.fit(xs, ts)
        memory = LinearFit.upper_segment(xs, ms)
        problems = []
        if time.slope <= 0:
            problems.append("iteration time does not grow with the batch size")
        if memory.slope <= 0:
            problems.append("peak memory does not grow with the batch size")
        if capacity_bytes <= 0:
            problems.append("the device's memory capacity is unknown")
        models = cls(
            time, memory, capacity_bytes, not problems, "; ".join(problems) or None
        )
        models.knee_batch_size = models._knee()
        return models

    # ---- predictions (mirrored in js/src) -------------------------------------------------
    def predict_iteration_ms(self, batch_size: float) -> float:
        return self._need(self.time)(batch_size)

    def predict_throughput(self, batch_size: float) -> float:
        """Samples per second at ``batch_size``; inf where the line predicts no time at all."""
        ms = self.predict_iteration_ms(batch_size)
        return 1000.0 * batch_size / ms if ms > 0 else math.inf

    def predict_peak_bytes(self, batch_size: float) -> float:
        return self._need(self.memory)(batch_size)

    @property
    def max_throughput(self) -> float | None:
        """The asymptote of x / R(x): 1000 / a samples/s (None unless a > 0 and it is finite)."""
        if self.time is None or self.time.slope <= 0:
            return None
        value = 1000.0 / self.time.slope
        return value if math.isfinite(value) else None

    def batch_size_for_throughput(self, samples_per_s: float) -> int:
        """The batch size whose predicted throughput is ``samples_per_s``, in [1, max_batch_size].

        Inverts 1000·x / (a·x + b) = t, i.e. x = t·b / (1000 − t·a). Where that has no positive
        finite solution with a positive predicted time (t at or beyond the asymptote 1000/a,
        t ≤ 0, or t below the asymptote with a negative intercept) the answer is whichever end,
        1 or ``max_batch_size()``, predicts the throughput nearer to t (1 on a tie), since the
        throughput is monotone in x between them.
        """
        fit = self._need(self.time)
        denominator = 1000.0 - samples_per_s * fit.slope
        x = samples_per_s * fit.intercept / denominator if denominator != 0 else math.nan
        if math.isfinite(x) and x > 0 and fit(x) > 0:
            return self._clamp(x)
        top = self.max_batch_size()
        low_gap = abs(self.predict_throughput(1) - samples_per_s)
        high_gap = abs(self.predict_throughput(top) - samples_per_s)
        return top if high_gap < low_gap else 1

    def batch_size_for_memory(self, peak_bytes: float) -> int:
        """The batch size whose predicted peak is ``peak_bytes``, rounded, in [1, max_batch_size].

        With a non-positive memory slope there is no inverse; the answer is 1.
        """
        memory = self._need(self.memory)
        if memory.slope <= 0:
            return 1
        return self._clamp(memory.inverse(peak_bytes))

    def max_batch_size(self) -> int:
        """The largest batch whose predicted peak fits the capacity: ⌊(capacity − d) / c⌋.

        At least 1 (the user's batch may itself not fit; the widget shows that), at most
        ``MAX_BATCH_SIZE``; 1 when the memory line does not grow or the capacity is unknown.
        """
        memory = self._need(self.memory)
        if memory.slope <= 0 or self.capacity_bytes <= 0:
            return 1
        x = memory.inverse(self.capacity_bytes)
        if not x < MAX_BATCH_SIZE:  # also catches nan/inf
            return MAX_BATCH_SIZE
        return math.floor(x) if x >= 1 else 1

    def _clamp(self, x: float) -> int:
        """Round (Python's ``round``: ties to even, as js/src/predict.js ``pyRound``), clamp to
        [1, max_batch_size]; nan gives 1."""
        if math.isnan(x) or x < 1:
            return 1
        top = self.max_batch_size()
        if x >= top:
            return top
        return max(1, min(round(x), top))

    def _knee(self) -> int | None:
        """Smallest x with throughput(2x) < (1 + KNEE_GAIN)·throughput(x), within capacity.

        With R(x) = a·x + b, T(2x)/T(x) = 2(a·x + b)/(2a·x + b) < 1 + g
        ⇔ x > b·(1 − g) / (2·g·a), so the knee has a closed form. None when a ≤ 0 (no
        asymptote) or when the knee lies beyond the largest batch that fits; 1 when b ≤ 0
        (doubling never pays).
        """
        fit = self.time
        if fit is None or fit.slope <= 0:
            return None
        if fit.intercept <= 0:
            return 1
        bound = fit.intercept * (1 - KNEE_GAIN) / (2 * KNEE_GAIN) / fit.slope  # no underflow
        if not bound < MAX_BATCH_SIZE:
            return None
        knee = math.floor(bound) + 1
        if (
            self.memory is not None
            and self.memory.slope > 0
            and self.capacity_bytes > 0
            and knee > self.max_batch_size()
        ):
            return None
        return knee

    @staticmethod
    def _need(fit: LinearFit | None) -> LinearFit:
        if fit is None:
            raise ValueError("no fitted model: predictions are off for this report")
        return fit

    # ---- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON for the report; the widget's JS reads these keys (keep them, add freely).

        ``max_batch_size`` and ``max_throughput`` are derived (recomputed by ``from_dict``);
        they are written so readers without the maths can still show them.
        """
        return {
            "time": None if self.time is None else self.time.to_dict(),
            "memory": None if self.memory is None else self.memory.to_dict(),
            "capacity_bytes": self.capacity_bytes,
            "can_manipulate": self.can_manipulate,
            "reason": self.reason,
            "knee_batch_size": self.knee_batch_size,
            "max_throughput": self.max_throughput,
            "max_batch_size": None if self.memory is None else self.max_batch_size(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PerformanceModels:
        def fit_of(item: dict[str, Any] | None) -> LinearFit | None:
            return None if item is None else LinearFit.from_dict(item)

        knee = data.get("knee_batch_size")
        return cls(
            time=fit_of(data.get("time")),
            memory=fit_of(data.get("memory")),
            capacity_bytes=int(data["capacity_bytes"]),
            can_manipulate=bool(data["can_manipulate"]),
            reason=data.get("reason"),
            knee_batch_size=None if knee is None else int(knee),
        )

"""Linear performance models of one training iteration: R(x) = a·x + b ms, M(x) = c·x + d bytes.

Pure numpy (no torch), so the report and the widget's maths can be checked without a device.
Skyline fitted the same two lines; its widget inverts them while the user drags a bar. The
widget's JavaScript mirrors ``predict_*`` and ``batch_size_for_*`` from the coefficients stored
in the report, so both sides must keep the same formulas (a shared fixture tests that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MIN_POINTS = 3
KNEE_GAIN = 0.05  # XSP's rule: doubling the batch buys less than 5 % more throughput


@dataclass
class LinearFit:
    """y = slope·x + intercept by least squares, with its residuals and R²."""

    slope: float
    intercept: float
    r2: float
    residuals: list[float] = field(default_factory=list)

    @classmethod
    def fit(cls, xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
        x = np.asarray(xs, dtype=float)
        y = np.asarray(ys, dtype=float)
        if x.size < 2 or np.ptp(x) == 0:
            raise ValueError("a line needs at least two distinct x values")
        slope, intercept = np.polyfit(x, y, 1)
        predicted = slope * x + intercept
        residuals = y - predicted
        total = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 1.0
        return cls(float(slope), float(intercept), r2, [float(r) for r in residuals])

    def __call__(self, x: float) -> float:
        return self.slope * x + self.intercept

    def inverse(self, y: float) -> float:
        return (y - self.intercept) / self.slope


@dataclass
class PerformanceModels:
    """The fitted time and memory lines plus what the widget needs to drag with them."""

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
        """Fit both lines; ``can_manipulate`` is false (with why) when a fit is unusable."""
        if len(set(batch_sizes)) < MIN_POINTS:
            why = reason or (
                f"only {len(set(batch_sizes))} batch size(s) could be measured; "
                f"predictions need {MIN_POINTS}"
            )
            return cls(None, None, capacity_bytes, False, why)
        time = LinearFit.fit(batch_sizes, iteration_ms)
        memory = LinearFit.fit(batch_sizes, peak_bytes)
        problems = []
        if time.slope <= 0:
            problems.append("iteration time does not grow with the batch size")
        if memory.slope <= 0:
            problems.append("peak memory does not grow with the batch size")
        models = cls(time, memory, capacity_bytes, not problems, "; ".join(problems) or reason)
        models.knee_batch_size = models._knee() if time.slope > 0 else None
        return models

    # ---- predictions (mirrored in js/src) -------------------------------------------------
    def predict_iteration_ms(self, batch_size: float) -> float:
        return self._need(self.time)(batch_size)

    def predict_throughput(self, batch_size: float) -> float:
        """Samples per second at ``batch_size``."""
        ms = self.predict_iteration_ms(batch_size)
        return 1000.0 * batch_size / ms if ms > 0 else math.inf

    def predict_peak_bytes(self, batch_size: float) -> float:
        return self._need(self.memory)(batch_size)

    @property
    def max_throughput(self) -> float | None:
        """The asymptote of x / R(x): 1000 / a samples/s."""
        if self.time is None or self.time.slope <= 0:
            return None
        return 1000.0 / self.time.slope

    def batch_size_for_throughput(self, samples_per_s: float) -> int:
        """Invert x·1000 / (a·x + b) = t, i.e. x = t·b / (1000 − t·a); clamped to [1, max]."""
        fit = self._need(self.time)
        denominator = 1000.0 - samples_per_s * fit.slope
        if denominator <= 0:
            return self.max_batch_size()
        return self._clamp(samples_per_s * fit.intercept / denominator)

    def batch_size_for_memory(self, peak_bytes: float) -> int:
        return self._clamp(self._need(self.memory).inverse(peak_bytes))

    def max_batch_size(self) -> int:
        """The largest batch whose predicted peak fits the device capacity."""
        memory = self._need(self.memory)
        if memory.slope <= 0:
            return 1
        return max(1, math.floor(memory.inverse(self.capacity_bytes)))

    def _clamp(self, x: float) -> int:
        if not math.isfinite(x):
            return self.max_batch_size()
        return int(min(max(1, round(x)), self.max_batch_size()))

    def _knee(self) -> int | None:
        """Smallest x with throughput(2x) < (1 + KNEE_GAIN)·throughput(x), within capacity.

        With R(x) = a·x + b, T(2x)/T(x) = 2(a·x + b)/(2a·x + b) < 1 + g
        ⇔ x > b·(1 − g) / (2·g·a), so the knee has a closed form.
        """
        fit = self._need(self.time)
        if fit.intercept <= 0:
            return 1
        knee = math.floor(fit.intercept * (1 - KNEE_GAIN) / (2 * KNEE_GAIN * fit.slope)) + 1
        if self.memory is not None and self.memory.slope > 0 and knee > self.max_batch_size():
            return None
        return knee

    @staticmethod
    def _need(fit: LinearFit | None) -> LinearFit:
        if fit is None:
            raise ValueError("no fitted model: predictions are off for this report")
        return fit

    # ---- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        def fit_dict(fit: LinearFit | None) -> dict[str, Any] | None:
            return None if fit is None else {
                "slope": fit.slope, "intercept": fit.intercept, "r2": fit.r2,
                "residuals": list(fit.residuals),
            }

        return {
            "time": fit_dict(self.time),
            "memory": fit_dict(self.memory),
            "capacity_bytes": self.capacity_bytes,
            "can_manipulate": self.can_manipulate,
            "reason": self.reason,
            "knee_batch_size": self.knee_batch_size,
            "max_throughput": self.max_throughput,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PerformanceModels:
        def fit_of(item: dict[str, Any] | None) -> LinearFit | None:
            return None if item is None else LinearFit(**item)

        return cls(
            time=fit_of(data.get("time")),
            memory=fit_of(data.get("memory")),
            capacity_bytes=int(data["capacity_bytes"]),
            can_manipulate=bool(data["can_manipulate"]),
            reason=data.get("reason"),
            knee_batch_size=data.get("knee_batch_size"),
        )

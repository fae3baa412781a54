"""Linear performance models of one training iteration: R(x) = a·x + b ms, M(x) = c·x + d bytes.

Pure numpy (no torch), so the report and the widget's maths can be checked without a device.
Skyline fitted the same two lines and let the user drag along them. The widget's JavaScript
(js/src/predict.js) mirrors the predictions, ``max_batch_size``, ``max_throughput``, the knee
and ``line_problems`` from the coefficients stored in the report, so both sides keep the same
formulas (``tests/fixtures/models_cases.json`` holds Python's answers for the JS tests).

What a report may show (the invariants ``skyline_nb.report_checks`` verifies): whenever
``can_manipulate`` is true, over the whole drag range [1, ``max_batch_size()``] the predicted
time is positive and finite, the predicted throughput never falls as the batch grows, the
peak is positive, and ``max_throughput`` is at least every measured throughput. The range
ends at the memory capacity when that is a real bound (``memory_bound``: GPU memory or a CPU
budget the user gave; a CPU's free RAM is no bound a user means) and at ``EXTRAPOLATION_LIMIT``
times the largest measured batch: beyond that a line drawn through 3 samples is a guess.

Known limitations: a line is what Skyline's widget drags along, but on CPU a Transformer's time
grows super-linearly far beyond the sampled range, and a launch-bound GPU model bends; the
trust rules (``trust.py``) turn dragging off when the samples show it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skyline_nb.models.fit import LinearFit
from skyline_nb.models.trust import fit_time

__all__ = ["EXTRAPOLATION_LIMIT", "KNEE_GAIN", "MAX_BATCH_SIZE", "LinearFit", "PerformanceModels"]

MIN_POINTS = 3
KNEE_GAIN = 0.05  # XSP's rule: doubling the batch buys less than 5 % more throughput
EXTRAPOLATION_LIMIT = 8  # the drag reaches at most 8× the largest measured batch size
# Batch sizes are integers the JS side must hold exactly; a near-zero memory slope must not
# turn into a batch size of 10^300 (or an OverflowError in math.floor).
MAX_BATCH_SIZE = 2**31 - 1
OLD_REPORT = "this report was written before the drag range was bounded; profile again to drag"


@dataclass
class PerformanceModels:
    """The fitted time and memory lines plus what the widget needs to drag with them.

    ``can_manipulate`` is false, and ``reason`` says why, when the samples are too few or the
    time line cannot be trusted (``trust.fit_time``), or when the lines themselves cannot
    support a drag (``line_problems``: checked on construction, so a hand-built or edited
    report cannot claim otherwise). The fits are kept when they exist, so the widget can draw
    them beside the measured points. ``measured_range`` is the smallest and largest batch size
    the fit used; ``measured_max_throughput`` the best throughput among those samples.
    """

    time: LinearFit | None
    memory: LinearFit | None
    capacity_bytes: int
    can_manipulate: bool
    reason: str | None = None
    knee_batch_size: int | None = None
    memory_bound: bool = True
    measured_range: tuple[int, int] | None = None
    measured_max_throughput: float | None = None

    def __post_init__(self) -> None:
        problems = self.line_problems()
        if self.can_manipulate and problems:
            self.can_manipulate = False
            self.reason = self.reason or "; ".join(problems)

    @classmethod
    def from_samples(
        cls,
        batch_sizes: Sequence[int],
        iteration_ms: Sequence[float],
        peak_bytes: Sequence[int],
        capacity_bytes: int,
        reason: str | None = None,
        *,
        memory_bound: bool = True,
    ) -> PerformanceModels:
        """Fit both lines; ``can_manipulate`` is false (with why) when a fit is unusable.

        Samples with a non-finite value, a batch size below 1 or a non-positive time cannot be
        measurements and are left out (``reason`` mentions it if that leaves too few points).
        ``reason`` from the sampler (e.g. "out of memory at 64") is kept when the fit fails.
        ``memory_bound``: whether ``capacity_bytes`` bounds the batch size (see the module).
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
            return cls(None, None, capacity_bytes, False, reason or why, memory_bound=memory_bound)
        xs, ts, ms = zip(*rows, strict=True)
        time, problems = fit_time(xs, ts)
        models = cls(
            time,
            LinearFit.upper_segment(xs, ms),
            capacity_bytes,
            not problems,
            "; ".join(problems) or None,
            memory_bound=memory_bound,
            measured_range=(int(min(xs)), int(max(xs))),
            measured_max_throughput=max(1000.0 * x / t for x, t in zip(xs, ts, strict=True)),
        )
        models.knee_batch_size = models._knee()
        return models

    def line_problems(self) -> list[str]:
        """Why these lines cannot support a drag, whatever the samples were (mirrored in JS).

        A trusted time line grows and has no negative fixed cost (so the time is positive and
        the throughput never falls over the range), the memory line grows and predicts a
        positive peak at batch 1, a capacity that bounds the range is known, and the range
        reaches the largest measured batch (it ran, so the lines must allow it).
        """
        if self.time is None or self.memory is None:
            return ["this report has no fitted lines"]
        if self.measured_range is None:
            return [OLD_REPORT]
        problems = []
        if self.time.slope <= 0:
            problems.append("iteration time does not grow with the batch size")
        elif self.time.intercept < 0:
            problems.append("the time line has a negative fixed cost per iteration")
        if self.memory.slope <= 0:
            problems.append("peak memory does not grow with the batch size")
        elif self.memory(1) <= 0:
            problems.append("the memory line predicts no memory at batch size 1")
        if self.memory_bound and self.capacity_bytes <= 0:
            problems.append("the device's memory capacity is unknown")
        if not problems and self.max_batch_size() < self.measured_range[1]:
            problems.append(
                f"the memory line puts the measured batch size {self.measured_range[1]} "
                "beyond the memory capacity"
            )
        return problems

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
        """The most the user can get within the drag range: predicted or measured.

        The throughput x/R(x) is monotone wherever R > 0, so its largest value over [1, top]
        is at an end; the best measured throughput is included, so this is never below a
        measured one (a sample a little above the line is noise the trust rules allow). Not
        the asymptote 1000/a, which only an infinite batch reaches. None while dragging is off.
        """
        if not self.can_manipulate or self.time is None:
            return None
        top = self.max_batch_size()
        value = max(self.predict_throughput(1), self.predict_throughput(top),
                    self.measured_max_throughput or 0.0)
        return value if math.isfinite(value) else None

    def batch_size_for_throughput(self, samples_per_s: float) -> int:
        """The batch size whose predicted throughput is ``samples_per_s``, in [1, max_batch_size].

        For scripts ("which batch gives 2,000 samples/s?"); the widget drags by batch size.
        Inverts 1000·x / (a·x + b) = t, i.e. x = t·b / (1000 − t·a). Where that has no positive
        finite solution with a positive predicted time (t at or beyond the asymptote 1000/a,
        t ≤ 0, a flat throughput), t lies outside the throughput's range over [1, top], which is
        monotone in x: the answer is the end with the higher throughput when t reaches it, else
        the other end (nan gives 1). Comparing gaps to t instead would tie in floating point far
        from the range and break monotonicity.
        """
        fit = self._need(self.time)
        denominator = 1000.0 - samples_per_s * fit.slope
        x = samples_per_s * fit.intercept / denominator if denominator != 0 else math.nan
        if math.isfinite(x) and x > 0 and fit(x) > 0:
            return self._clamp(x)
        if math.isnan(samples_per_s):
            return 1
        top = self.max_batch_size()
        (_, low_end), (high, high_end) = sorted(
            ((self.predict_throughput(1), 1), (self.predict_throughput(top), top))
        )
        return high_end if samples_per_s >= high else low_end

    def batch_size_for_memory(self, peak_bytes: float) -> int:
        """The batch size whose predicted peak is ``peak_bytes``, rounded, in [1, max_batch_size].

        For scripts ("which batch fits 10 GiB?"). With a non-positive memory slope there is no
        inverse; the answer is 1.
        """
        memory = self._need(self.memory)
        if memory.slope <= 0:
            return 1
        return self._clamp(memory.inverse(peak_bytes))

    def max_batch_size(self) -> int:
        """The top of the drag range, in [1, MAX_BATCH_SIZE].

        The smaller of: the largest batch whose predicted peak fits the capacity,
        ⌊(capacity − d) / c⌋ (only when ``memory_bound``; 1 when memory does not grow or the
        capacity is unknown), and ``EXTRAPOLATION_LIMIT`` × the largest measured batch size.
        """
        memory = self._need(self.memory)
        limits = [MAX_BATCH_SIZE]
        if self.memory_bound:
            limits.append(self._capacity_limit(memory))
        if self.measured_range is not None:
            limits.append(EXTRAPOLATION_LIMIT * self.measured_range[1])
        return max(1, min(limits))

    def _capacity_limit(self, memory: LinearFit) -> int:
        if memory.slope <= 0 or self.capacity_bytes <= 0:
            return 1
        x = memory.inverse(self.capacity_bytes)
        if not x < MAX_BATCH_SIZE:  # also catches nan/inf
            return MAX_BATCH_SIZE
        return math.floor(x) if x >= 1 else 1

    def _clamp(self, x: float) -> int:
        """Round (Python's ``round``: ties to even), clamp to [1, max_batch_size]; nan gives 1."""
        if math.isnan(x) or x < 1:
            return 1
        top = self.max_batch_size()
        if x >= top:
            return top
        return max(1, min(round(x), top))

    def _knee(self) -> int | None:
        """Smallest x with throughput(2x) < (1 + KNEE_GAIN)·throughput(x), within the range.

        With R(x) = a·x + b, T(2x)/T(x) = 2(a·x + b)/(2a·x + b) < 1 + g
        ⇔ x > b·(1 − g) / (2·g·a), so the knee has a closed form. None when a ≤ 0 (no
        asymptote) or when the knee lies beyond the drag range; 1 when b ≤ 0 (doubling never
        pays).
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
        if self.memory is not None and knee > self.max_batch_size():
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
            "memory_bound": self.memory_bound,
            "measured_range": None if self.measured_range is None else list(self.measured_range),
            "measured_max_throughput": self.measured_max_throughput,
            "max_throughput": self.max_throughput,
            "max_batch_size": None if self.memory is None else self.max_batch_size(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PerformanceModels:
        """Read ``to_dict``'s JSON; a dict from before the bounded range cannot drag."""

        def fit_of(item: dict[str, Any] | None) -> LinearFit | None:
            return None if item is None else LinearFit.from_dict(item)

        knee = data.get("knee_batch_size")
        span = data.get("measured_range")
        best = data.get("measured_max_throughput")
        return cls(
            time=fit_of(data.get("time")),
            memory=fit_of(data.get("memory")),
            capacity_bytes=int(data["capacity_bytes"]),
            can_manipulate=bool(data["can_manipulate"]),
            reason=data.get("reason"),
            knee_batch_size=None if knee is None else int(knee),
            memory_bound=bool(data.get("memory_bound", True)),
            measured_range=None if span is None else (int(span[0]), int(span[1])),
            measured_max_throughput=None if best is None else float(best),
        )

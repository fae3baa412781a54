"""Performance models of one training iteration: time T(b) ms and peak memory M(b) bytes.

Pure numpy (no torch), so the report and the widget's maths can be checked without a device.
Skyline fitted two straight lines, R(x) = a·x + b and M(x) = c·x + d, and let the user drag
along them. Here each is a ``Curve`` (``curve.py``): the maximum of a few lines, so a time that
is flat while launch-bound and then grows (a bend), or grows faster past a threshold, is
followed; a straight line stays a straight line. The widget's JavaScript (js/src/predict.js)
mirrors the predictions, ``max_batch_size``, ``max_throughput``, the knee, the bend and
``line_problems`` from the lines stored in the report, so both sides keep the same formulas
(``tests/fixtures/models_cases.json`` holds Python's answers for the JS tests).

What a report may show (the invariants ``skyline_nb.report_checks`` verifies): whenever
``can_manipulate`` is true, over the whole drag range [``min_batch_size()``,
``max_batch_size()``] the predicted time is positive and finite, the peak is positive, and
``max_throughput`` is the largest predicted throughput there and at least every measured one.
The throughput may fall where time per sample grows with the batch (a CPU past its caches):
that is what a user gets.
The range ends at the memory capacity when that is a real bound (``memory_bound``: GPU memory
or a CPU budget the user gave; a CPU's free RAM is no bound a user means, but no range passes
it, less a process's heap, either: a profile once offered 53.6 GiB with 22.4 GiB free) and at
``EXTRAPOLATION_LIMIT`` times the largest measured batch size (``FLAT_EXTRAPOLATION_LIMIT``
when the time did not grow over the samples: "launch-bound up to at least N" says nothing of
where it starts to grow), and below ``fails_at``, a batch size where the user's code raised;
it starts at 1, or above ``fails_below``, the largest size below the samples where it raised
(a model that squeezes its batch dimension, batch norm over one sample).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skyline_nb.models.curve import FLAT, TOLERANCE, Curve
from skyline_nb.models.fit import LinearFit
from skyline_nb.models.knee import KNEE_GAIN, MAX_BATCH_SIZE, place_knee, read_spread
from skyline_nb.models.memory_curve import fit_memory
from skyline_nb.models.trust import AGAIN, fit_time

__all__ = ["EXTRAPOLATION_LIMIT", "FLAT_EXTRAPOLATION_LIMIT", "KNEE_GAIN", "MAX_BATCH_SIZE",
           "PHASE_TIE", "Curve", "LinearFit", "PerformanceModels"]

MIN_POINTS = 3
EXTRAPOLATION_LIMIT = 8  # the drag reaches at most 8× the largest measured batch size
FLAT_EXTRAPOLATION_LIMIT = 2  # ... and 2× it when the time did not grow over the samples
OLD_REPORT = "this report was written before the drag range was bounded; profile again to drag"
# Phases whose predicted peaks lie this close are not told apart: a BERT's forward and backward
# peaks grew 313,096 and 312,852 B a sample, and the forward's crossed above at 512 by 0.03 %.
PHASE_TIE = 0.01


def _curve(fit: Curve | LinearFit | None) -> Curve | None:
    return Curve.of_line(fit) if isinstance(fit, LinearFit) else fit


@dataclass
class PerformanceModels:
    """The fitted time and memory curves plus what the widget needs to drag with them.

    ``can_manipulate`` is false, and ``reason`` says why, when the samples are too few or the
    time curve cannot be trusted (``trust.fit_time``), or when the curves themselves cannot
    support a drag (``line_problems``: checked on construction, so a hand-built or edited
    report cannot claim otherwise). The fits are kept when they exist, to draw beside the
    samples. ``measured_range``: the smallest and largest batch size fitted;
    ``measured_max_throughput``: their best throughput. A ``LinearFit`` is its one-line curve.
    """

    time: Curve | None
    memory: Curve | None
    capacity_bytes: int
    can_manipulate: bool
    reason: str | None = None
    knee_batch_size: int | None = None
    knee_range: tuple[int, int | None] | None = None  # how firm the knee is (``knee_spread``)
    memory_bound: bool = True
    measured_range: tuple[int, int] | None = None
    measured_max_throughput: float | None = None
    fails_at: int | None = None  # the smallest batch size above the samples that raised
    fails_below: int | None = None  # the largest batch size below the samples that raised
    tolerance: float = TOLERANCE  # how far samples scatter when nothing changes (``fit_time``)

    def __post_init__(self) -> None:
        self.time, self.memory = _curve(self.time), _curve(self.memory)
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
        tolerance: float = TOLERANCE,
        peak_phases: Sequence[Mapping[str, float]] | None = None,
        fails_at: int | None = None,
        fails_below: int | None = None,
    ) -> PerformanceModels:
        """Fit both curves; ``can_manipulate`` is false (with why) when a fit is unusable.

        Samples with a non-finite value, a batch size below 1 or a non-positive time are left
        out; ``reason`` from the sampler (e.g. "out of memory at 64") is kept if the fit fails.
        ``memory_bound``: whether ``capacity_bytes`` bounds the batch size (see the module);
        ``tolerance``: how far (relative) the samples scatter when nothing changes, for
        ``curve.fit_time``; ``peak_phases``: each sample's peak per phase of the step, for
        ``memory_curve.fit_memory``; ``fails_at``, ``fails_below``: see the class.
        """
        phases = list(peak_phases) if peak_phases is not None else [{}] * len(batch_sizes)
        if not len(batch_sizes) == len(iteration_ms) == len(peak_bytes) == len(phases):
            raise ValueError("batch_sizes, iteration_ms, peak_bytes, peak_phases differ in length")
        rows = [
            (float(x), float(t), float(m), p)
            for x, t, m, p in zip(batch_sizes, iteration_ms, peak_bytes, phases, strict=True)
            if all(math.isfinite(float(v)) for v in (x, t, m)) and x >= 1 and t > 0 and m >= 0
        ]
        dropped = len(batch_sizes) - len(rows)
        distinct = len({row[0] for row in rows})
        if distinct < MIN_POINTS:
            why = f"only {distinct} batch size(s) could be measured; predictions need {MIN_POINTS}"
            if dropped:
                why += f" ({dropped} sample(s) had invalid values)"
            return cls(None, None, capacity_bytes, False, reason or why, memory_bound=memory_bound)
        xs, ts, ms, ps = zip(*rows, strict=True)
        time, problems = fit_time(xs, ts, tolerance)
        models = cls(
            time,
            fit_memory(xs, ms, ps),
            capacity_bytes,
            not problems,
            "; ".join(problems) or None,
            memory_bound=memory_bound,
            measured_range=(int(min(xs)), int(max(xs))),
            measured_max_throughput=max(1000.0 * x / t for x, t in zip(xs, ts, strict=True)),
            fails_at=fails_at,
            fails_below=fails_below,
            tolerance=tolerance,
        )
        if problems:  # everything wrong, the samples' and the curves', then what to do
            more = [p for p in models.line_problems() if p not in problems]
            models.reason = "; ".join(sorted(problems + more, key=AGAIN.__eq__))
        place_knee(models, xs, ts)
        return models

    def line_problems(self) -> list[str]:
        """Why these curves cannot support a drag, whatever the samples were (mirrored in JS).

        A trusted time curve never falls (no line with a negative slope), has no negative
        fixed cost (its value at batch 0) and is positive at batch 1 (so the time is positive
        over the range), the memory curve grows and predicts
        a positive peak at batch 1, a capacity that bounds the range is known, and the range
        reaches the measured batch sizes (they ran, so the curves must allow them).
        """
        if self.time is None or self.memory is None:
            return ["this report has no fitted lines"]
        if self.measured_range is None:
            return [OLD_REPORT]
        problems = []
        if any(line.slope < 0 for line in self.time.lines):
            problems.append("iteration time does not grow with the batch size")
        elif self.time(0) < 0:
            problems.append("the time line has a negative fixed cost per iteration")
        elif self.time(1) <= 0:
            problems.append("the time curve predicts no time at batch size 1")
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
        if self.min_batch_size() > self.measured_range[0]:
            problems.append(f"the measured batch size {self.measured_range[0]} is below a size "
                            f"where the code raised ({self.fails_below})")
        return problems

    # ---- what the curves say (mirrored in js/src/predict.js) --------------------------------
    @property
    def launch_bound_up_to(self) -> int | None:
        """The largest measured batch size when the time did not grow up to it, else None."""
        if self.time is None or self.time.shape != FLAT or self.measured_range is None:
            return None
        return self.measured_range[1]

    @property
    def bend_batch_size(self) -> float | None:
        """Where the time stops being flat and starts to grow (a ``bend`` curve), else None."""
        return None if self.time is None else self.time.bend()

    @property
    def asymptotic_throughput(self) -> float | None:
        """1000 / the steepest time slope: the throughput only an infinite batch reaches."""
        if self.time is None or self.time.slope <= 0:
            return None
        value = 1000.0 / self.time.slope
        return value if math.isfinite(value) else None

    # ---- predictions (mirrored in js/src) -------------------------------------------------
    def predict_iteration_ms(self, batch_size: float) -> float:
        return self._need(self.time)(batch_size)

    def predict_throughput(self, batch_size: float) -> float:
        """Samples per second at ``batch_size``; inf where the curve predicts no time at all."""
        ms = self.predict_iteration_ms(batch_size)
        return 1000.0 * batch_size / ms if ms > 0 else math.inf

    def predict_peak_bytes(self, batch_size: float) -> float:
        return self._need(self.memory)(batch_size)

    def peak_phase_at(self, batch_size: float) -> str | None:
        """The phase of the memory line that is the curve at ``batch_size`` (None: none)."""
        return self._need(self.memory).line_at(batch_size).phase

    def peak_phases_at(self, batch_size: float, share: float = PHASE_TIE) -> list[str]:
        """``peak_phase_at``, then other phases within ``share`` of it there (``PHASE_TIE``)."""
        return self._need(self.memory).phases_near(batch_size, share)

    def turns(self, top: int) -> list[float]:
        """Batch sizes in [min_batch_size, top] between which the throughput is monotone: the
        ends and the time curve's breakpoints (on one line, x/(a·x + b) is monotone)."""
        time = self._need(self.time)
        bottom = self.min_batch_size()
        return [float(bottom), *(x for x in time.breakpoints() if bottom < x < top), float(top)]

    @property
    def max_throughput(self) -> float | None:
        """The most the user can get within the drag range: predicted or measured.

        The throughput is monotone between the time curve's breakpoints, so its largest value
        over the range is at one of them or at an end; the best measured throughput is
        included, so this is never below a measured one (a sample a little above the curve is
        noise the trust rules allow). Not the asymptote, which only an infinite batch reaches.
        None while dragging is off.
        """
        if (best := self._best_turn()) is None:
            return None
        value = max(self.predict_throughput(best), self.measured_max_throughput or 0.0)
        return value if math.isfinite(value) else None

    @property
    def max_throughput_batch_size(self) -> float | None:
        """Where ``max_throughput`` is predicted: the first end of the drag range or breakpoint
        whose throughput is the largest; None where a measured throughput is as large (a tie
        within rounding is the sample's), or dragging is off. The widget names it, marked
        extrapolated beyond the measured sizes. (A busy CNN's curve through the origin below
        its smallest sample tied it at batch 1, which the header named, extrapolated.)"""
        best = self._best_turn()
        measured = (self.measured_max_throughput or 0.0) * (1 + 1e-9)
        return best if best is not None and self.predict_throughput(best) > measured else None

    def _best_turn(self) -> float | None:
        """The first of ``turns`` with the most predicted throughput; None while dragging is off."""
        if not self.can_manipulate or self.time is None:
            return None
        return max(self.turns(self.max_batch_size()), key=self.predict_throughput)

    def batch_size_for_throughput(self, samples_per_s: float) -> int:
        """The smallest batch size whose predicted throughput reaches ``samples_per_s``, in
        the drag range; for scripts ("which batch gives 2,000 samples/s?").

        On each monotone stretch (``turns``) the time is one line a·x + b, and
        1000·x / (a·x + b) = t at x = t·b / (1000 − t·a). Where no stretch reaches t, the
        batch size with the most throughput (nan gives the smallest).
        """
        bottom = self.min_batch_size()
        if math.isnan(samples_per_s):
            return bottom
        time = self._need(self.time)
        turns = self.turns(self.max_batch_size())
        if self.predict_throughput(bottom) >= samples_per_s:
            return bottom
        for lo, hi in itertools.pairwise(turns):
            line = time.line_at((lo + hi) / 2)
            denominator = 1000.0 - samples_per_s * line.slope
            x = samples_per_s * line.intercept / denominator if denominator != 0 else math.nan
            if lo <= x <= hi and line(x) > 0:
                return self._clamp(x)
        return self._clamp(max(turns, key=self.predict_throughput))

    def batch_size_for_memory(self, peak_bytes: float) -> int:
        """The largest batch size whose predicted peak is at most ``peak_bytes``, rounded, in
        the drag range; for scripts ("which batch fits 10 GiB?"). Its smallest size when
        memory does not grow."""
        memory = self._need(self.memory)
        if memory.slope <= 0:
            return self.min_batch_size()
        return self._clamp(memory.inverse(peak_bytes))

    def min_batch_size(self) -> int:
        """The bottom of the drag range: 1, or the size above ``fails_below``."""
        return 1 if self.fails_below is None else self.fails_below + 1

    def max_batch_size(self) -> int:
        """The top of the drag range, in [1, MAX_BATCH_SIZE].

        The smaller of: ⌊curve⁻¹(capacity)⌋, the largest batch whose predicted peak fits the
        capacity (when ``memory_bound``, 1 when memory does not grow or the capacity is
        unknown; else a CPU's free RAM less its heap, where known, never below the samples),
        ``EXTRAPOLATION_LIMIT`` (``FLAT_EXTRAPOLATION_LIMIT`` for a flat time) × the largest
        measured batch size, and the size below ``fails_at``.
        """
        memory = self._need(self.memory)
        limits = [MAX_BATCH_SIZE]
        if self.memory_bound or (memory.slope > 0 and self.capacity_bytes > 0):
            low = self.measured_range[1] if self.measured_range and not self.memory_bound else 1
            limits.append(max(self._capacity_limit(memory), low))
        if self.measured_range is not None:
            flat = self.time is not None and self.time.shape == FLAT
            reach = FLAT_EXTRAPOLATION_LIMIT if flat else EXTRAPOLATION_LIMIT
            limits.append(reach * self.measured_range[1])
        if self.fails_at is not None:
            limits.append(self.fails_at - 1)
        return max(1, min(limits))

    def _capacity_limit(self, memory: Curve) -> int:
        if memory.slope <= 0 or self.capacity_bytes <= 0:
            return 1
        x = memory.inverse(self.capacity_bytes)
        if not x < MAX_BATCH_SIZE:  # also catches nan/inf
            return MAX_BATCH_SIZE
        return math.floor(x) if x >= 1 else 1

    def _clamp(self, x: float) -> int:
        """Round (ties to even) and clamp to the drag range; nan gives its bottom."""
        bottom, top = self.min_batch_size(), self.max_batch_size()
        if math.isnan(x) or x < bottom:
            return bottom
        if x >= top:
            return top
        return max(bottom, min(round(x), top))

    @staticmethod
    def _need(fit: Curve | None) -> Curve:
        if fit is None:
            raise ValueError("no fitted model: predictions are off for this report")
        return fit

    def to_dict(self) -> dict[str, Any]:
        """JSON for the report; the widget's JS reads these keys (keep them, add freely). The
        derived ``max_batch_size``, ``max_throughput``, ``bend_batch_size``, ``launch_bound_up_to``
        and ``asymptotic_throughput`` are written for readers without the maths."""
        has_memory = self.memory is not None
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
            "max_batch_size": self.max_batch_size() if has_memory else None,
            "bend_batch_size": self.bend_batch_size,
            "launch_bound_up_to": self.launch_bound_up_to,
            "asymptotic_throughput": self.asymptotic_throughput,
            # only where a size failed, or off the default: older reports read the same
            **({} if self.knee_range is None else {"knee_range": list(self.knee_range)}),
            **({} if self.fails_at is None else {"fails_at": self.fails_at}),
            **({} if self.fails_below is None else {"fails_below": self.fails_below}),
            **({} if self.tolerance == TOLERANCE else {"tolerance": self.tolerance}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PerformanceModels:
        """Read ``to_dict``'s JSON; a dict from before the bounded range cannot drag."""
        time, memory = (None if data.get(k) is None else Curve.from_dict(data[k])
                        for k in ("time", "memory"))
        knee = data.get("knee_batch_size")
        span = data.get("measured_range")
        best = data.get("measured_max_throughput")
        fails, fails_below = data.get("fails_at"), data.get("fails_below")
        return cls(
            time=time,
            memory=memory,
            capacity_bytes=int(data["capacity_bytes"]),
            can_manipulate=bool(data["can_manipulate"]),
            reason=data.get("reason"),
            knee_batch_size=None if knee is None else int(knee),
            knee_range=read_spread(data.get("knee_range")),
            memory_bound=bool(data.get("memory_bound", True)),
            measured_range=None if span is None else (int(span[0]), int(span[1])),
            measured_max_throughput=None if best is None else float(best),
            fails_at=None if fails is None else int(fails),
            fails_below=None if fails_below is None else int(fails_below),
            tolerance=float(data.get("tolerance", TOLERANCE)),
        )

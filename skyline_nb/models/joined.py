"""A measurement the user asked for joins the curve it was compared with.

"Measure at N" times batch size N after a drag, and the widget says how far the prediction was
off. Beyond the samples that can be far: a Llama-style model profiled at 4 (samples 2, 4, 8)
was predicted 49.8 samples/s at 60 and measured 36.5, 26.7 % off, as its time per sample grew
past 8 (session 44). The curve then knows nothing of it, and the bars, the header's maximum
and the next drag still said 49.8. Here the time curve is fitted anew through the samples and
N, under the same rules and tolerance as the profile's own fit (``trust.fit_time``), so every
view follows what was measured where the user looked, and the measured range, with the drag's
reach (``EXTRAPOLATION_LIMIT`` × the largest), grows to N.

A measurement within the tolerance of the curve confirms it, and the curve stays: refitting
through it only moved the curve by noise elsewhere (``benchmarks/measure_join.py`` at one
thread: measurements 0.1-3.6 % off the prediction took the held-out error from 3.5-9.8 % to
5.3-11.7 %). A new curve is taken only within the tolerance of N and as near the profile's
samples as the profile's own curve: they were timed minutes apart, and where the host's pace
moved between (this VM's moved by half), the rules alone would allow a curve 10-15 % off two
samples, drawn through two paces. Where there is none and N lies beyond the samples (or below
them), the profile's curve stays over them and a straight piece runs on from its end through N
(``_through``): the step's growth turned where the profile did not look. A later measurement
between the ends of such a piece splits it in two through N.

The memory curve stays as it is: the samples' peaks per phase fit it, which a plain
measurement does not mark, and the peaks it predicts were within 0.1 % of fresh models'
(BENCHMARKS.md); the widget still shows how far N's measured peak lay from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from skyline_nb.models.curve import BEND, CONVEX, FLAT, LINE, Curve, Line, _finish
from skyline_nb.models.knee import place_knee
from skyline_nb.models.memory_curve import _order
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.models.trust import fit_time, spread


class NotJoined(ValueError):
    """The samples with the new one draw no curve a drag can trust; the old curve stays."""


def with_time_sample(models: PerformanceModels, sizes: Sequence[int], times_ms: Sequence[float],
                     size: int, ms: float) -> PerformanceModels:
    """``models`` with ``size`` at ``ms`` among the profile's samples (``sizes``, ``times_ms``;
    one at ``size`` is replaced): its time curve as it was where that lies within the tolerance
    of it; else fitted anew (``trust.fit_time``) where that curve is as near them all as the
    module asks, else, for a ``size`` beyond the samples, the profile's curve over its samples
    and a straight piece on to ``size``, or between two measurements where the curve was one
    (``_through``). Raises ``NotJoined`` with the reason when neither is one to drag on, or
    ``models`` had no curve to drag."""
    if not models.can_manipulate or models.time is None:
        raise NotJoined(models.reason or "this profile draws no curve to join")
    kept = [(n, t) for n, t in zip(sizes, times_ms, strict=True) if n != size]
    xs, ts = [n for n, _ in kept] + [size], [t for _, t in kept] + [ms]
    time = models.time  # N within the tolerance of it: confirmed, as it was
    if spread(time, [size], [ms]) > models.tolerance:
        time, problems = fit_time(xs, ts, models.tolerance)
        # as near the profile's samples as its own curve was, and within the tolerance of N
        allowed = max(models.tolerance, spread(models.time, xs[:-1], ts[:-1]))
        if (problems or spread(time, xs[:-1], ts[:-1]) > allowed
                or spread(time, [size], [ms]) > models.tolerance):
            time = _through(models.time, xs[:-1], size, ms)
    time = _finish(time.lines, time.shape, np.array(xs, dtype=float), np.array(ts, dtype=float),
                   envelope=False)
    low, high = int(min(xs)), int(max(xs))
    joined = replace(
        models, time=time, reason=None, measured_range=(low, high),
        measured_max_throughput=max(1000.0 * n / t for n, t in zip(xs, ts, strict=True)),
        # a size that raised in the profile and ran now (the user's data, or memory freed since)
        fails_at=None if models.fails_at is None or models.fails_at <= high else models.fails_at,
        fails_below=(None if models.fails_below is None or models.fails_below >= low
                     else models.fails_below),
    )
    if not joined.can_manipulate:  # the curves' own problems, found on construction
        raise NotJoined(joined.reason or "the curve through it cannot be dragged")
    place_knee(joined, xs, ts)
    return joined


def _through(curve: Curve, sizes: Sequence[int], size: int, ms: float) -> Curve:
    """``curve`` where it was measured (the samples' ``sizes``) and, between the samples
    around ``size`` (or past the last of them), straight pieces through ``size`` at ``ms``:
    what was measured, joined by what can be said between two measurements. Past the samples
    the piece goes on beyond ``size``: the example CNN at 2 threads grew 1.52, 1.39, then 0.99
    ms a sample from 4 to 8, 16 and 64 (its threads share more of a larger batch), which no
    curve of ``fit_time``'s (a line that steepens, or a bend) follows within 6 %. Between two
    samples only where the curve there is made of straight pieces that hold over stretches
    (chords: such pieces, or ``trust._steep_start``'s), which say nothing between their ends
    but that they are joined: the CNN, bridged from 16 to 64, read +10 % above it at 40. Where the
    curve there is a line fitted through the profile's samples, a measurement far from it says
    the machine's pace moved: ``NotJoined``."""
    below = max((n for n in sizes if n < size), default=None)
    above = min((n for n in sizes if n > size), default=None)
    if below is not None and above is not None and not _chords(curve, sizes, below, above):
        raise NotJoined("no curve of the profile's kind goes near it and the other samples: "
                        "the machine's pace may have changed since the profile, or while "
                        "measuring; measure again, or Re-profile to measure them all anew")
    if below is not None and ms <= curve(below):
        raise _ran_no("slower", below, curve)
    if above is not None and ms >= curve(above):
        raise _ran_no("faster", above, curve)
    pieces = []
    if below is not None:
        slope = (ms - curve(below)) / (size - below)
        pieces.append(Line(slope, ms - slope * size, start=below,
                           end=None if above is None else size))
    if above is not None:
        slope = (curve(above) - ms) / (above - size)
        pieces.append(Line(slope, ms - slope * size, start=None if below is None else size,
                           end=above))
    held = []  # each line where it held outside (below, above)
    for line in curve.lines:
        if below is not None and (line.start is None or line.start < below):
            held.append(replace(line, end=below if line.end is None else min(line.end, below)))
        if above is not None and (line.end is None or line.end > above):
            held.append(replace(line, start=above if line.start is None
                                else max(line.start, above)))
    lines = sorted([*held, *pieces], key=_order)
    if below is not None and above is not None:
        return Curve(lines, shape=curve.shape)
    # past the samples a bend stays where it was, and a flat curve bends where the piece starts
    if above is None and curve.shape in (FLAT, BEND):
        return Curve(lines, shape=BEND)
    return Curve(lines, shape=CONVEX if curve.shape == CONVEX else LINE)


def _chords(curve: Curve, sizes: Sequence[int], below: int, above: int) -> bool:
    """Whether the curve between the samples ``below`` and ``above`` is made of pieces that
    hold over stretches only, none over a sample between its ends (within the samples'
    range): chords between measurements, not a line fitted through several (the profile's,
    also where a piece past its samples ends it)."""
    low, high = min(sizes), max(sizes)
    for line in curve.lines:
        start = low if line.start is None else max(line.start, low)
        end = high if line.end is None else min(line.end, high)
        if start >= above or end <= below:
            continue  # it does not hold between them
        if (line.start is None and line.end is None) or any(start < n < end for n in sizes):
            return False
    return True


def _ran_no(than: str, size: int, curve: Curve) -> NotJoined:
    return NotJoined(f"it ran no {than} than batch size {size}, where the curve says "
                     f"{curve(size):.3g} ms: the machine's pace may have changed since")

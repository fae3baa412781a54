"""Whether the iteration-time curve fitted to the samples can be trusted to predict from.

A drag predicts along the curve, up to 8× beyond the largest sample, so a curve that does not
describe the samples turns into nonsense there (negative predicted times, a maximum
throughput below a measured one). ``curve.fit_time`` draws the simplest curve the samples
allow within their noise: flat (launch-bound), a line with a fixed cost ≥ 0, a bend (flat,
then a line) or a line that steepens. It is not trusted (the reasons are in words a user
understands) when:

- it grows and R² is below ``MIN_R2``: the curve leaves more than 5 % of how the time varies
  over the sampled sizes unexplained (honest profiles score 0.999+). When the residuals are
  larger than the whole growth between the smallest and largest sample, the reason says so in
  those terms;
- it is flat and a sample is more than ``MAX_FLAT_SPREAD`` from it: times that scatter that
  much without growing are noise, not a launch-bound model;
- a sample is more than ``MAX_OFF_FACTOR`` times off the curve either way: R² is dominated by
  the large sizes, so the user's own (small) batch can be 20× off a line with R² = 0.9998 (a
  fast first sample and stalled larger ones) and the maximum throughput would sit far below
  the measured one. A line forced through the origin far from the samples fails here too.

Except where the samples show no growth at all over a wide range (``_no_growth``: at least
``NOISY_FLAT_SIZES`` sizes spanning ``NOISY_FLAT_RANGE``×, the least-squares line's slope
within ``GROWTH_T`` standard errors of 0) and scatter within ``MAX_NOISY_FLAT_SPREAD`` of
their mean: then the curve is flat, as issue 15 asks ("no refusal for flat time"). A
launch-bound LSTM on an H100 host read 5.8–7.6 ms from batch 4 to 128 (the host launching its
kernels at a pace that moved ±12 % between samples) and all three profiles refused it, hiding
the one thing a user needs to know: a larger batch costs no more time there. ``spread``
says how far such samples scatter, for the report to say so. And except where the samples
are such a floor up to some size and a line beyond it (``_clear_bend``): each piece is judged
on its own samples, as R² over both cannot. And except where only the smallest size is off, a
little below a line the others make (``_steep_start``): a step whose time falls faster at a
tiny batch than the line says, joined to it by a straight piece.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from skyline_nb.export.units import format_ms
from skyline_nb.models.curve import (
    FLAT,
    LINE,
    MIN_R2,
    TOLERANCE,
    Curve,
    Line,
    fit_bends,
    flat_time,
)
from skyline_nb.models.curve import fit_time as fit_curve
from skyline_nb.models.fit import LinearFit

MAX_OFF_FACTOR = 1.25
MAX_FLAT_SPREAD = 0.10
# No growth over a wide range: at least this many sizes, the largest this many times the
# smallest (a CPU MLP's 4–64 scatter ±15 % around a real growth of 30 %, t = 1.98: four
# sizes are too few), the line's slope under GROWTH_T standard errors, and
# every sample within this of the flat curve (within MAX_OFF_FACTOR of it: 1/0.8 = 1.25).
NOISY_FLAT_SIZES, NOISY_FLAT_RANGE, GROWTH_T = 5, 16.0, 2.0
MAX_NOISY_FLAT_SPREAD = 0.20
# How far below the line through the larger sizes the smallest may lie and be joined to it by
# a straight piece (``_steep_start``): a CPU's tiny MLP read 1.31–1.32× below at ¼×.
MAX_STEEP_FACTOR = 1.5
# The last of a refused curve's reasons: what the user can do. Quiet 2-core profiles of users'
# models from 8 were refused in 4 of 20 (ten models), where plain loops' blocks of 7 steps at
# one size moved from 22.8 to 37.1 ms within a minute (t5 at 4; BENCHMARKS.md, session 49).
AGAIN = ("the machine's pace may have changed while the sizes were timed (other programs, or "
         "the host's own), or the step's time depends on more than its batch size: profile "
         "again when the machine is quieter")


def fit_time(
    xs: Sequence[float], ts: Sequence[float], tolerance: float = TOLERANCE
) -> tuple[Curve, list[str]]:
    """The time curve to predict with, and why it cannot be trusted (empty when it can)."""
    curve = fit_curve(xs, ts, tolerance)
    problems = _scatter(xs, ts, curve)
    if problems and _no_growth(xs, ts):
        flat = flat_time(xs, ts)
        if spread(flat, xs, ts) <= MAX_NOISY_FLAT_SPREAD:
            return flat, []
    if problems:
        bend = _clear_bend(xs, ts, tolerance)
        if bend is not None:
            return bend, []
        steep = _steep_start(xs, ts, tolerance)
        if steep is not None:
            return steep, []
    return curve, [*problems, AGAIN] if problems else []


def spread(curve: Curve, xs: Sequence[float], ts: Sequence[float]) -> float:
    """How far (relative to the curve) the samples lie from it, at most."""
    return max((abs(t / curve(x) - 1) for x, t in zip(xs, ts, strict=True)), default=0.0)


def _clear_bend(xs: Sequence[float], ts: Sequence[float], tolerance: float) -> Curve | None:
    """The first of ``curve.fit_bends`` (a floor and a line, least squares first) whose pieces
    hold on their own, as R² over all the samples cannot judge them (``_pieces_hold``); None
    when none does. R² weighs the floor's scatter against the whole growth, which a few sizes
    past the bend make small: an LSTM launch-bound on an H100 read 8.2–10.2 ms from 8 to 128
    and 10–12 ms at 256 and 512, and all three profiles were refused (R² 0.84–0.93) though the
    floor scattered ≤ 10 % and the rise was 28–39 % (BENCHMARKS.md, session 18)."""
    return next((bend for bend in fit_bends(xs, ts) if _pieces_hold(bend, xs, ts, tolerance)),
                None)


def _pieces_hold(bend: Curve, xs: Sequence[float], ts: Sequence[float],
                 tolerance: float) -> bool:
    """Two sizes or more on each piece, and either the floor's samples within
    ``MAX_FLAT_SPREAD`` of it (what a flat curve needs) and the line's within ``tolerance``,
    or, on a host whose pace moves, a floor with the evidence a scattered flat curve needs
    (``_no_growth``) and every sample within ``MAX_NOISY_FLAT_SPREAD`` of its piece (an H100's
    LSTM from 8 in session 26: floors scattered 12–17 % over 8…256 while the host's launch
    pace moved, rising 36–50 % by 512; two of three profiles were refused); and in both, the
    largest size above the floor by more than twice that scatter (a rise the noise cannot
    make, nor the line's)."""
    floor, line = bend.lines
    meets = bend.bend() or 0.0
    on_floor = [(x, t) for x, t in zip(xs, ts, strict=True) if x < meets]
    on_line = [(x, t) for x, t in zip(xs, ts, strict=True) if x >= meets]
    if min(len({x for x, _ in side}) for side in (on_floor, on_line)) < 2:
        return False  # one size is no evidence of a floor or of a line
    scatter = max(abs(t / floor.intercept - 1) for _, t in on_floor)
    off = max(abs(t / line(x) - 1) for x, t in on_line)
    if scatter > MAX_FLAT_SPREAD or off > tolerance:
        floor_xs, floor_ts = zip(*on_floor, strict=True)
        if max(scatter, off) > MAX_NOISY_FLAT_SPREAD or not _no_growth(floor_xs, floor_ts):
            return False
    rise = bend(max(xs)) / floor.intercept - 1
    return rise > 2 * max(scatter, off)


def _steep_start(xs: Sequence[float], ts: Sequence[float], tolerance: float) -> Curve | None:
    """The line through the other sizes, joined to the smallest by a straight piece where
    the time falls faster there (a CPU's tiny MLP: 1.37 ms at 2, a line through 8…512 says
    1.80, refused as 1.31× off in 2 of 3 profiles; BENCHMARKS.md, session 23): the sizes from
    the second smallest on, at least three, must make a trusted line on their own, and the
    smallest lie below it by at most ``MAX_STEEP_FACTOR`` (issue 12's 0.42 ms beside stalls
    that put the line at 8 ms is a measurement gone wrong, not a step); the piece predicts
    between two measured sizes. None otherwise."""
    smallest = min(xs)
    rest = [(x, t) for x, t in zip(xs, ts, strict=True) if x > smallest]
    low = [t for x, t in zip(xs, ts, strict=True) if x == smallest]
    if len(low) != 1 or len({x for x, _ in rest}) < 3:
        return None
    rest_xs, rest_ts = [x for x, _ in rest], [t for _, t in rest]
    line = fit_curve(rest_xs, rest_ts, tolerance)
    if (line.shape != LINE or _scatter(rest_xs, rest_ts, line)
            or not line(smallest) / MAX_STEEP_FACTOR <= low[0] < line(smallest)):
        return None
    joint = min(rest_xs)
    slope = (line(joint) - low[0]) / (joint - smallest)
    piece = Line(slope, low[0] - slope * smallest, end=joint)
    steep = Curve([piece, replace(line.lines[0], start=joint)], line.r2, shape=LINE)
    steep.residuals = [t - steep(x) for x, t in zip(xs, ts, strict=True)]
    return steep


def _no_growth(xs: Sequence[float], ts: Sequence[float]) -> bool:
    """Whether the samples span a wide range of sizes and show no growth over it: the
    least-squares line's slope is within ``GROWTH_T`` of its standard errors from 0."""
    sizes = sorted(set(xs))
    if len(sizes) < NOISY_FLAT_SIZES or sizes[-1] < NOISY_FLAT_RANGE * sizes[0]:
        return False
    line = LinearFit.fit(xs, ts)
    mean = sum(xs) / len(xs)
    spread_x = sum((x - mean) ** 2 for x in xs)
    error = math.sqrt(sum(r * r for r in line.residuals) / (len(xs) - 2) / spread_x)
    return line.slope <= GROWTH_T * error


def _scatter(xs: Sequence[float], ts: Sequence[float], curve: Curve) -> list[str]:
    problems = []
    lo, hi = min(xs), max(xs)
    noise = max(abs(r) for r in curve.residuals)
    if curve.shape == FLAT:
        scatter = max(abs(r) / t for r, t in zip(curve.residuals, ts, strict=True))
        if scatter > MAX_FLAT_SPREAD:
            problems.append(
                f"the iteration time does not grow from batch size {lo:g} to {hi:g} and the "
                f"measured times vary by up to {scatter:.0%} (at most "
                f"{MAX_FLAT_SPREAD:.0%} is needed to call it flat)"
            )
    elif curve.r2 < MIN_R2:
        growth = curve(hi) - curve(lo)
        if noise > growth:
            problems.append(
                f"the iteration time grows by only {format_ms(growth)} from batch size "
                f"{lo:g} to {hi:g}, less than the measurement noise ({format_ms(noise)})"
            )
        else:
            problems.append(
                f"the measured times are too scattered around the fitted curve "
                f"(R² = {curve.r2:.2f}; at least {MIN_R2} is needed)"
            )
    factors = [(max(t / curve(x), curve(x) / t), x, t) for x, t in zip(xs, ts, strict=True)]
    worst, x, t = max(factors)
    if worst > MAX_OFF_FACTOR:
        problems.append(
            f"the time measured at batch size {x:g} ({format_ms(t)}) is far from what the "
            f"curve through all measured sizes predicts there ({format_ms(curve(x))})"
        )
    return problems

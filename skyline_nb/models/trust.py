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
"""

from __future__ import annotations

from collections.abc import Sequence

from skyline_nb.export.units import format_ms
from skyline_nb.models.curve import FLAT, MIN_R2, TOLERANCE, Curve
from skyline_nb.models.curve import fit_time as fit_curve

MAX_OFF_FACTOR = 1.25
MAX_FLAT_SPREAD = 0.10


def fit_time(
    xs: Sequence[float], ts: Sequence[float], tolerance: float = TOLERANCE
) -> tuple[Curve, list[str]]:
    """The time curve to predict with, and why it cannot be trusted (empty when it can)."""
    curve = fit_curve(xs, ts, tolerance)
    return curve, _scatter(xs, ts, curve)


def _scatter(xs: Sequence[float], ts: Sequence[float], curve: Curve) -> list[str]:
    problems = []
    lo, hi = min(xs), max(xs)
    noise = max(abs(r) for r in curve.residuals)
    if curve.shape == FLAT:
        spread = max(abs(r) / t for r, t in zip(curve.residuals, ts, strict=True))
        if spread > MAX_FLAT_SPREAD:
            problems.append(
                f"the iteration time does not grow from batch size {lo:g} to {hi:g} and the "
                f"measured times vary by up to {spread:.0%} (at most "
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

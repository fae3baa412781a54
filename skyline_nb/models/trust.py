"""Whether the iteration-time line fitted to the samples can be trusted to predict from.

A drag predicts along the line, up to 8× beyond the largest sample, so a line that does not
describe the samples turns into nonsense there (negative predicted times, a maximum
throughput below a measured one). ``fit_time`` draws the line by least squares subject to
a fixed cost per iteration (the intercept) of at least 0: no iteration takes negative time at
batch 0. When the unconstrained intercept comes out negative (noise, or time per sample that
grows a little with the batch, as a CNN's does on CPU), the constrained optimum lies on that
boundary, the line through the origin. So a line that is drawn always predicts a positive
time and a throughput that never falls as the batch grows. It is not trusted (the reasons are
in words a user understands) when:

- R² is below ``MIN_R2``: the line leaves more than 5 % of how the time varies over the sampled
  sizes unexplained (honest profiles score 0.999+). When the residuals are larger than
  the whole growth the line explains between the smallest and largest sample, the reason says
  so in those terms;
- a sample is more than ``MAX_OFF_FACTOR`` times off the line either way: R² is dominated by
  the large sizes, so the user's own (small) batch can be 20× off a line with R² = 0.9998 (a
  fast first sample and stalled larger ones) and the maximum throughput would sit far below
  the measured one. A line forced through the origin far from the samples fails here too.

A line whose time does not grow at all is not judged here: ``PerformanceModels`` says so.
Known limitations: a GPU model that is launch-bound at small sizes bends (flat, then linear);
a straight line through the bend often fails the R² rule, and dragging is then off.
"""

from __future__ import annotations

from collections.abc import Sequence

from skyline_nb.export.units import format_ms
from skyline_nb.models.fit import LinearFit

MIN_R2 = 0.95
MAX_OFF_FACTOR = 1.25


def fit_time(xs: Sequence[float], ts: Sequence[float]) -> tuple[LinearFit, list[str]]:
    """The time line to predict with, and why it cannot be trusted (empty when it can)."""
    fit = LinearFit.fit(xs, ts)
    if fit.slope <= 0:
        return fit, []
    if fit.intercept < 0:
        fit = LinearFit.through_origin(xs, ts)
    return fit, _scatter(xs, ts, fit)


def _scatter(xs: Sequence[float], ts: Sequence[float], fit: LinearFit) -> list[str]:
    problems = []
    lo, hi = min(xs), max(xs)
    if fit.r2 < MIN_R2:
        growth = fit.slope * (hi - lo)
        noise = max(abs(r) for r in fit.residuals)
        if noise > growth:
            problems.append(
                f"the iteration time grows by only {format_ms(growth)} from batch size "
                f"{lo:g} to {hi:g}, less than the measurement noise ({format_ms(noise)})"
            )
        else:
            problems.append(
                f"the measured times are too scattered around a straight line "
                f"(R² = {fit.r2:.2f}; at least {MIN_R2} is needed)"
            )
    factors = [(max(t / fit(x), fit(x) / t), x, t) for x, t in zip(xs, ts, strict=True)]
    worst, x, t = max(factors)
    if worst > MAX_OFF_FACTOR:
        problems.append(
            f"the time measured at batch size {x:g} ({format_ms(t)}) is far from what the "
            f"line through all measured sizes predicts there ({format_ms(fit(x))})"
        )
    return problems

"""The knee of the throughput curve: where doubling the batch stops paying (XSP's rule).

Kept apart from ``performance.py`` because it is one self-contained piece of arithmetic on a
time curve and a range, mirrored line for line in ``js/src/predict.js`` (``Predictor.knee``).

How firmly the samples place it (``knee_spread``) is said beside it. The knee of a line
T = a + b·x lies near 9.5·a/b: a fixed cost extrapolated below the samples, over a slope, so a
host whose pace moves between samples moves it far. Profiles of one notebook 10 minutes apart
put it at 20, 39, 40, 56, 74 and 145 (BENCHMARKS.md, session 55), each shown as if exact.
Leaving out one measured size at a time and fitting again under the profile's own rules (a
jackknife) shows how much any one sample decides it; the range is computed where the samples
are, in Python, and the widget only shows it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from skyline_nb.models.curve import Curve
from skyline_nb.models.trust import fit_time

if TYPE_CHECKING:
    from skyline_nb.models.performance import PerformanceModels

KNEE_GAIN = 0.05  # XSP's rule: doubling the batch buys less than 5 % more throughput
# Batch sizes are integers the JS side must hold exactly; a near-zero memory slope must not
# turn into a batch size of 10^300 (or an OverflowError in math.floor).
MAX_BATCH_SIZE = 2**31 - 1
# Three sizes at least, so that each left with one out is a line through two (a CPU profile's
# samples are often ½×, 1× and 2× the batch; ``fit_time`` draws two sizes' line, or a flat one).
SPREAD_SIZES = 3


def knee_batch_size(time: Curve, bottom: int, top: int) -> int | None:
    """Smallest integer x in [bottom, top] with throughput(2x) < (1 + g)·throughput(x).

    Between the points where x or 2x crosses a breakpoint of the time curve, T(x) and T(2x)
    are each one line, a·x + b and c·(2x) + d, and the condition 2(a·x + b) < (1 + g)(2c·x + d)
    is linear: A·x < B with A = 2a − 2(1 + g)c, B = (1 + g)d − 2b. None when no batch in the
    range satisfies it (a flat time: doubling always doubles the throughput), or when the time
    does not grow at all; ``bottom`` when every batch does.
    """
    if time.slope <= 0:
        return None
    cuts = {float(bottom), float(top)}
    for x in time.breakpoints():
        cuts |= {v for v in (x, x / 2) if bottom < v < top}
    g = KNEE_GAIN
    for lo, hi in itertools.pairwise(sorted(cuts)):
        here, there = time.line_at((lo + hi) / 2), time.line_at(lo + hi)
        a_coef = 2 * here.slope - 2 * (1 + g) * there.slope
        b_coef = (1 + g) * there.intercept - 2 * here.intercept
        first = math.ceil(lo)
        if a_coef == 0:
            found = first if b_coef > 0 else None
        elif a_coef > 0:
            found = first if first < b_coef / a_coef else None
        else:  # x > B / A
            bound = b_coef / a_coef
            if math.isnan(bound) or not bound < MAX_BATCH_SIZE:
                found = None
            else:
                found = first if bound < first else math.floor(bound) + 1
        if found is not None and found <= hi:
            return found
    return None


def knee_spread(xs: Sequence[float], ts: Sequence[float], tolerance: float, bottom: int,
                top: int, knee: int | None) -> tuple[int, int | None] | None:
    """The lowest and highest knee over [bottom, top] of the time curves fitted to the samples
    (``xs`` sizes, ``ts`` ms) with each size left out in turn (``trust.fit_time``, as the
    profile fits), ``knee`` among them; the highest is None where such a curve has no knee up
    to ``top`` (doubling pays over the whole range). None where there is no ``knee``, or
    fewer than ``SPREAD_SIZES`` sizes to leave one out of."""
    sizes = sorted(set(xs))
    if knee is None or len(sizes) < SPREAD_SIZES:
        return None
    knees: list[int | None] = [knee]
    for out in sizes:
        kept = [(x, t) for x, t in zip(xs, ts, strict=True) if x != out]
        curve, _ = fit_time([x for x, _ in kept], [t for _, t in kept], tolerance)
        knees.append(knee_batch_size(curve, bottom, top))
    found = [k for k in knees if k is not None]
    return min(found), (None if None in knees else max(found))


def place_knee(models: PerformanceModels, xs: Sequence[float], ts: Sequence[float]) -> None:
    """Set ``models``' knee over its drag range and how firmly the samples (``xs`` sizes,
    ``ts`` ms) place it (``knee_spread``); both None without a time and a memory curve."""
    models.knee_batch_size, models.knee_range = None, None
    if models.time is None or models.memory is None:
        return
    bottom, top = models.min_batch_size(), models.max_batch_size()
    models.knee_batch_size = knee_batch_size(models.time, bottom, top)
    models.knee_range = knee_spread(xs, ts, models.tolerance, bottom, top,
                                    models.knee_batch_size)


def read_spread(value: Any) -> tuple[int, int | None] | None:
    """``knee_spread``'s pair as the report's JSON holds it (a list; None: not known)."""
    if value is None:
        return None
    return int(value[0]), None if value[1] is None else int(value[1])

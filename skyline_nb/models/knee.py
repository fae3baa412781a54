"""The knee of the throughput curve: where doubling the batch stops paying (XSP's rule).

Kept apart from ``performance.py`` because it is one self-contained piece of arithmetic on a
time curve and a range, mirrored line for line in ``js/src/predict.js`` (``Predictor.knee``).
"""

from __future__ import annotations

import itertools
import math

from skyline_nb.models.curve import Curve

KNEE_GAIN = 0.05  # XSP's rule: doubling the batch buys less than 5 % more throughput
# Batch sizes are integers the JS side must hold exactly; a near-zero memory slope must not
# turn into a batch size of 10^300 (or an OverflowError in math.floor).
MAX_BATCH_SIZE = 2**31 - 1


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

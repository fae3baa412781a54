"""The peak-memory curve through a training step's measured samples: exact at every sample.

A step's peak is the largest of its phases' peaks (forward, the loss, backward, the optimizer
step; ``profiler/phases.py``), and on a CPU each phase grows in a straight line with the
batch. On a GPU a phase's peak also steps where a library picks another kernel for a larger
input: on an H200 the example Transformer's backward peak is 0.5 MiB higher from batch 32 on
than the line through 8 and 16 says, and the example CNN's doubles between 48 and 64 (cuDNN
choosing a convolution with a larger workspace). A maximum of lines through the two largest
samples, the curve before this one, then lay 4.6 % (Transformer) and 88 % (CNN) above the
peak measured at the user's own batch (BENCHMARKS.md, "CUDA, H200").

So each phase's curve joins its samples in straight pieces; below the smallest sample the
first piece goes on, beyond the largest the last (the line through the two largest sizes:
where a phase grows faster than the others, it takes over there too). The curve is the largest
of the phases' curves: exact at every sample (the step's peak there), exact between two samples
wherever each phase is linear between them, also where the phase holding the peak changes. A
phase whose peak falls as the batch grows holds its larger value (no phase needs less memory
for more samples; a falling piece would make the curve fall too), so the curve never falls and
a peak that stops growing leaves a flat last piece, which the trust rules refuse. Without
phases (a profiler of the user's running, an older report's samples): the step's peaks,
joined the same way; a hinge between two samples (the phase holding the peak changes there)
is then drawn as the straight piece between them, above the hinge by at most the difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from skyline_nb.models.curve import BEND, LINE, Curve, Line, _finish, _groups, _line
from skyline_nb.models.fit import _points


def fit_memory(xs: Sequence[float], ys: Sequence[float],
               phases: Sequence[Mapping[str, float]] | None = None) -> Curve:
    """The memory curve (module doc) through the samples' peaks ``ys`` at batch sizes ``xs``;
    ``phases``: each sample's peak per phase, the same phases at every size (else ignored)."""
    x, y = _points(xs, ys)
    names = _common_phases(phases, len(x))
    if names:
        lines = [replace(line, phase=name) for name in names
                 for line in _pieces(x, np.array([float(p[name]) for p in phases or ()]))]
    else:
        lines = _pieces(x, y)
    kept: list[Line] = []
    for line in lines:
        if not any(_covers(other, line) for other in kept):
            kept = [other for other in kept if not _covers(line, other)] + [line]
    kept.sort(key=_order)
    curve = _finish(kept, LINE, x, y, envelope=False)
    curve.shape = BEND if len(curve.lines) > 1 else LINE
    return curve


def _common_phases(phases: Sequence[Mapping[str, float]] | None, count: int) -> list[str]:
    """The phases every sample has a peak for, when every sample has the same ones."""
    if not phases or len(phases) != count or not phases[0]:
        return []
    names = sorted(phases[0])
    return names if all(sorted(p) == names for p in phases) else []


def _pieces(x: np.ndarray, y: np.ndarray) -> list[Line]:
    """The straight pieces joining the samples (y averaged per size; a falling value holds the
    larger one before it), the first going on below the smallest size, the last beyond the
    largest; or, where the samples lie on a parabola that bends up (``_parabola_beyond``),
    chords of it beyond the largest."""
    gx, gy = _groups(x, y)
    gy = np.maximum.accumulate(gy)
    last = len(gx) - 2
    pieces = [replace(_line(gx[k:k + 2], gy[k:k + 2]),
                      start=None if k == 0 else float(gx[k]),
                      end=None if k == last else float(gx[k + 1]))
              for k in range(last + 1)]
    beyond = _parabola_beyond(gx, gy)
    if beyond:
        pieces[-1] = replace(pieces[-1], end=float(gx[-1]))
    return pieces + beyond


# Where a parabola's chords go on beyond the largest sample, in multiples of it (the drag
# reaches 8×), and how closely a fourth sample must lie on the parabola through the last three
CHORDS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0)
ON_PARABOLA = 0.002
# ... and how far above the last piece's line it must be at twice the largest sample
BENDS_UP = 0.01


def _parabola_beyond(gx: np.ndarray, gy: np.ndarray) -> list[Line]:
    """Chords of the parabola through the last three samples beyond the largest, when a fourth
    lies on it too and it bends up: memory that grows with the square of the batch (a B×B
    pairwise matrix: a line beyond samples up to 128 read 22 / 37 / 66 % low at 192 / 256 /
    512). Chords of a parabola that bends up lie on or above it: a prediction errs towards
    less that fits. Else none: the last piece goes on as a line (a GPU's peak that steps
    where a library picks another kernel lies on no parabola of four samples)."""
    if len(gx) < 4:
        return []
    a, b, c = np.polyfit(gx[-3:], gy[-3:], 2)
    if a <= 0 or abs(np.polyval((a, b, c), gx[-4]) - gy[-4]) > ON_PARABOLA * gy[-4]:
        return []
    last = _line(gx[-2:], gy[-2:])
    far = 2.0 * gx[-1]
    if np.polyval((a, b, c), far) <= (1.0 + BENDS_UP) * last(far):
        return []
    points = [float(gx[-1]) * k for k in CHORDS]
    values = [float(np.polyval((a, b, c), v)) for v in points]
    values[0] = float(gy[-1])  # exact at the sample
    return [replace(_line(np.array(points[k:k + 2]), np.array(values[k:k + 2])),
                    start=points[k], end=None if k == len(points) - 2 else points[k + 1])
            for k in range(len(points) - 1)]


def _covers(a: Line, b: Line) -> bool:
    """Whether ``a`` holds wherever ``b`` does and is at least ``b`` there (for batch sizes
    from 1 on), so that ``b`` never decides the curve."""
    if (a.start is not None and (b.start is None or b.start < a.start)) or (
            a.end is not None and (b.end is None or b.end > a.end)):
        return False
    low = b.start if b.start is not None else min(1.0, b.end if b.end is not None else 1.0)
    if a(low) < b(low):
        return False
    return a.slope >= b.slope if b.end is None else a(b.end) >= b(b.end)


def _order(line: Line) -> tuple[float, float, float]:
    """Curve's order: by where the line starts, those that hold to infinity last, by slope."""
    start = -np.inf if line.start is None else line.start
    end = np.inf if line.end is None else line.end
    return (float(start), float(end), line.slope)

"""Choose the batch sizes to measure for the performance models, backing off on out-of-memory.

Skyline measured the user's batch and a few sizes 20 apart, which says little about a model
profiled at batch 8 and dragged to 128. Here the extra sizes spread over the feasible range:
the given ``multiples`` of the user's batch (2×, 4×, 8× unless the caller asks for others;
``sample_plan`` asks for 2×) where memory allows, ½×, ¼×… only after those, fewer above and
more below when the user's batch is already near the largest that fits. Above the user's
batch, a size within 1.5× of one already measured waits while a farther one fits, so the points
span as wide a range as memory allows.

Sizes are chosen by memory (``peak_at(n)``, one tracked iteration at n; the caller may time n
right after it). The memory line uses the two largest sizes (``LinearFit.upper_segment``), and
so does the capacity estimate here.

The feasible range comes from memory. With one point, peak/batch is an upper bound on the
per-sample slope (the intercept, weights and optimizer state, is never negative), so
capacity·batch/peak is a size that fits if memory is linear; from two points on, the memory
line through the two largest points predicts it. A size whose predicted peak exceeds the
capacity is not measured at all. When a measurement still fails with an out-of-memory error (or
a measured peak exceeds the capacity, which on CPU is the user's memory budget), the size
becomes the known limit and the next try halves the gap to the last size that worked; after
two failures only sizes below the user's are tried. A size where the user's providers raise
(``SizeFailed``: a shape written for their batch, labels of a fixed length) is no memory limit
to halve towards: no size beyond it on its side of the user's batch is tried. With a lone point
and nothing smaller (batch 1), one size above is probed even if the one-point bound forbids it:
that bound assumes no weights.

Imports no torch: the caller passes ``peak_at`` and the exception types that mean "out of
memory" on its device (``torch.OutOfMemoryError`` on CUDA), so this module can be tested with a
fake machine.

Example usage::

    peaks, reason = choose_sizes(peak_at, batch_size, peak, capacity_bytes,
                                 oom_errors=(torch.OutOfMemoryError, MemoryError))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skyline_nb.models.fit import LinearFit

MIN_POINTS = 3
# Multiples of the user's batch measured first, in this order, where memory allows. Far points
# matter most: users drag to larger batches, and on CPU time grows faster than linearly beyond
# a cache size, so a line through ½× and 2× under-predicts 4× (BENCHMARKS.md). ½× comes only
# after them: peak memory is piecewise linear and a small batch can sit on another piece.
MULTIPLES = (2, 4, 8)
# Out-of-memory failures tolerated before giving up: each costs a (failed) iteration. After
# ABOVE_RETRIES of them, only sizes below the user's (which fit, since the user's did) are tried.
MAX_FAILURES = 4
ABOVE_RETRIES = 2
DEFAULT_POINTS = MIN_POINTS
# Sizes closer than this factor to a measured one are tried only when nothing farther fits:
# points close together give time lines whose intercept noise can flip the sign of the
# throughput slope on a busy machine.
SPREAD = 1.5


@dataclass(frozen=True)
class Refusal:
    """The user's providers raised at ``batch_size``, not theirs (their own batch ran): what
    they said is ``why``, one sentence for the widget. Kept apart from the exception, whose
    traceback would hold that iteration's tensors."""

    batch_size: int
    why: str

    def __str__(self) -> str:
        return f"at batch size {self.batch_size}, {self.why}"


def fails_above(refused: Sequence[Refusal], user: int) -> int | None:
    """The smallest refused size above the user's batch (None: none was)."""
    return min((r.batch_size for r in refused if r.batch_size > user), default=None)


def fails_below(refused: Sequence[Refusal], user: int) -> int | None:
    """The largest refused size below the user's batch (None: none was)."""
    return max((r.batch_size for r in refused if r.batch_size < user), default=None)


class SizeFailed(Exception):
    """``peak_at``'s way to say a size was refused (``Refusal``)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


def choose_sizes(
    peak_at: Callable[[int], int],
    user: int,
    user_peak: int,
    capacity_bytes: int,
    *,
    oom_errors: tuple[type[BaseException], ...] = (MemoryError,),
    max_points: int = DEFAULT_POINTS,
    multiples: tuple[int, ...] = MULTIPLES,
    known: dict[int, int] | None = None,
    refused: Sequence[Refusal] = (),
) -> tuple[dict[int, int], str | None]:
    """The user's batch plus up to ``max_points − 1`` more sizes, with their peak bytes.

    ``peak_at(n)`` measures the peak memory of one iteration at batch size n (the caller frees
    memory when it raises one of ``oom_errors``); it raises ``SizeFailed`` where the user's
    providers do (``refused``: such failures met while measuring ``known``). ``capacity_bytes``
    is the device's memory, or the user's memory budget on CPU; 0 or less means unknown (no
    memory-based limit).

    Returns {batch size: peak bytes} (the user's included) and None, or, when fewer than three
    distinct batch sizes fit, a sentence saying why, for the widget to show. Errors other than
    ``oom_errors`` and ``SizeFailed`` propagate.
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, not {max_points}")
    if user < 1:
        raise ValueError(f"batch size must be at least 1, not {user}")
    state = _State(user, capacity_bytes, {**(known or {}), user: user_peak}, multiples)
    for failure in refused:
        state.refused(failure)
    while len(state.measured) < max_points and state.failures < MAX_FAILURES:
        target = state.next_target()
        if target is None:
            break
        try:
            peak = peak_at(target)
        except oom_errors:
            state.failed(target)
            continue
        except SizeFailed as exc:
            state.refused(exc.refusal)
            continue
        if 0 < capacity_bytes < peak:
            state.failed(target)  # over the budget: as good as out of memory
            continue
        state.measured[target] = peak
    return dict(sorted(state.measured.items())), state.reason()


@dataclass
class _State:
    """What sampling has learnt so far: measured points and the smallest size that failed."""

    user: int
    capacity: int
    measured: dict[int, int]  # batch size → peak bytes
    multiples: tuple[int, ...] = MULTIPLES
    too_big: int | None = None  # smallest size that ran out of memory (or over the budget)
    limit: float = math.inf  # after a failure: halfway between the last good size and it
    failures: int = 0
    refusal: Refusal | None = None  # the first size where the providers raised
    refused_above: bool = False  # ... at a size above the user's: none is tried there again
    refused_below: int = 0  # the largest size below the user's where they raised

    def refused(self, failure: Refusal) -> None:
        self.failures += 1
        self.refusal = self.refusal or failure
        if failure.batch_size > self.user:
            self.refused_above = True
        else:
            self.refused_below = max(self.refused_below, failure.batch_size)

    def failed(self, size: int) -> None:
        self.failures += 1
        self.too_big = size if self.too_big is None else min(self.too_big, size)
        good = max((s for s in self.measured if s < size), default=0)
        self.limit = min(self.limit, (good + size) // 2)

    def ceiling(self) -> int:
        """The largest size worth trying above the user's: REACH× it, or what memory allows."""
        reach = max(self.multiples, default=1) * self.user
        top = min(reach, self.limit, memory_max(self.measured, self.capacity))
        if self.too_big is not None:
            top = min(top, self.too_big - 1)
        return max(0, math.floor(top))

    def next_target(self) -> int | None:
        ceiling = self.ceiling()
        candidates = []
        # after a refusal, sizes between the multiples are as likely to be refused
        for size in _preferred(self.user, ceiling, self.multiples, self.refusal is None):
            if size in self.measured or (self.too_big is not None and size >= self.too_big):
                continue
            if size > self.user and (self.failures >= ABOVE_RETRIES or self.refused_above):
                continue
            if size <= self.refused_below:
                continue
            if size <= ceiling:
                candidates.append(size)
        # Spread first: above the user's batch, a size within SPREAD× of a measured one adds
        # little to the slope while a farther one fits (the one-point memory bound can make
        # "2×" a size just under it: 32, then 50, then 64 instead of 128).
        far = [
            c for c in candidates if c > self.user and all(_apart(c, m) for m in self.measured)
        ]
        pick = far or candidates
        return pick[0] if pick else self._probe()

    def _probe(self) -> int | None:
        """One size above a lone point whose own peak fits: the one-point bound assumes no
        weights, so with heavy weights and nothing smaller to try (batch 1) it would stop at
        one point; a second point gives the real slope. A failure is backed off as usual."""
        size = self.user + 1
        if len(self.measured) != 1 or self.too_big is not None or self.refused_above:
            return None
        return size if self.capacity <= 0 or self.measured[self.user] <= self.capacity else None

    def reason(self) -> str | None:
        """None with enough points; else one sentence for the widget, e.g. "only 2 batch
        sizes could be measured (8, 16): batch size 32 ran out of memory; predictions need 3"."""
        if len(self.measured) >= MIN_POINTS:
            return None
        why = [] if self.refusal is None else [str(self.refusal)]
        if self.too_big is not None:
            why.append(f"batch size {self.too_big} ran out of memory")
        elif self.capacity > 0 and self.ceiling() < max(self.multiples, default=1) * self.user:
            why.append(
                "other batch sizes are predicted to exceed the memory capacity "
                f"({self.capacity / 2**20:.1f} MiB)"
            )
        if self.user == 1:
            why.append("no batch size is smaller than 1")
        count = len(self.measured)
        sizes = ", ".join(str(s) for s in sorted(self.measured))
        detail = f": {'; '.join(why)}" if why else ""
        return (
            f"only {count} batch size{'s' if count > 1 else ''} could be measured ({sizes})"
            f"{detail}; predictions need {MIN_POINTS}"
        )


def _apart(a: int, b: int) -> bool:
    return max(a, b) >= SPREAD * min(a, b)


def _preferred(user: int, ceiling: int, multiples: tuple[int, ...] = MULTIPLES,
               between: bool = True) -> list[int]:
    """Sizes in the order to measure them: above the user's batch, then below, then between.

    Above: 2×, 4×, 8× (each capped at the ceiling, so a memory limit below 8× is itself
    measured, unless it is within ¼× of the user's batch), smaller first so the memory
    estimate is refined before the larger try. Below: ½×, ¼×, … (the only option when the
    user's batch is near the maximum). Between: other sizes above, for tiny batches where ½×
    does not exist (user 1 at a ceiling of 4 → 2, 4, then 3), unless ``between`` is false.
    """
    step = user + max(1, user // 4)  # a size just above the user's adds little to a fit
    above = sorted({size for m in multiples if (size := min(m * user, ceiling)) >= step})
    below = sorted({user >> k for k in range(1, user.bit_length())} - {0}, reverse=True)
    return above + below + (_between(user, ceiling, above) if between else [])


def _between(user: int, ceiling: int, above: list[int]) -> list[int]:
    between = sorted(
        {round(user + (ceiling - user) * f) for f in (0.25, 0.5, 0.75)} - set(above)
    )
    return [s for s in between if user < s < ceiling]


def memory_max(measured: dict[int, int], capacity: int) -> float:
    """The largest batch size predicted to fit ``capacity`` from the measured peaks.

    One point, or a line that does not grow: peak/batch is an upper bound on the slope, so
    capacity / max(peak/batch) fits whenever memory is linear with a non-negative intercept.
    Two sizes or more: the memory model's line (through the two largest) predicts it (a wrong
    guess costs one out-of-memory back-off). Unknown capacity: no limit.
    """
    if capacity <= 0:
        return math.inf
    bound = max(peak / batch for batch, peak in measured.items())
    conservative = capacity / bound if bound > 0 else math.inf
    if len(measured) < 2:
        return conservative
    line = LinearFit.upper_segment(list(measured), list(measured.values()))
    return line.inverse(capacity) if line.slope > 0 else conservative

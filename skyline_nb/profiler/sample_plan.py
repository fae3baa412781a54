"""Which batch sizes to measure for the performance curves, decided as the measurements come in.

Geometric spacing: 2× the user's batch, then ½× when the time grew clearly from the user's
batch to 2× (beyond twice the tolerance: a slope that three close points resolve), else 4× (a
time that barely grows needs a wider range to show its slope, and a flat one is looked at
further anyway); ``choose_sizes`` backs off when memory is short. Where the time grew clearly
and the budget affords 4×, 4× comes before ½×, which then follows where the budget still
allows it: the drag and the sizes a user asks about lie above their batch, and a line through
½–2× carried to 8× multiplies its samples' noise by about four. From 8 on a CPU, ½–2×
predicted 1.5–8× with 6.5–11.1 % mean errors for the example Transformer and LSTM; with 4×
first, at the same cost, 3.5–5.7 % (BENCHMARKS.md, session 54). Then more only where the
samples ask for it and the time budget allows:

- while the time stays flat (launch-bound: the host, not the device, sets the pace), double the
  largest size, up to ``FLAT_REACH``× the user's batch as memory allows: a curve that is flat
  wherever it was measured says nothing of where it starts to grow, so look further (cheap:
  flat means larger batches cost no more time);
- where the curve bends or steepens and its steepest piece rests on one size only, twice the
  largest size (a bend measured once beyond it could be anywhere between);
- where the curve through the samples cannot be trusted (``trust.fit_time``: times scattered
  around it beyond what its growth explains), twice the largest size, up to ``FLAT_REACH``×:
  the growth between the smallest and the largest sample is what R² weighs the noise against,
  and it grows with the range while the noise does not (an MLP of 0.6 ms iterations in a
  notebook whose browser shares 2 cores: R² too low in 6 of 12 profiles without this rule, 2
  of 12 with it, though there the small sizes' own noise, > 1.25× off the curve, still turned
  3 off; the example MLP of 2 ms, quiet: trusted in 12 vs 7 of 16 profiles from 8, 15 vs 11
  from 16; BENCHMARKS.md);
- 4× the user's batch where the samples stop below it, then ½× where 4× came before it, then,
  where iterations are cheap (under ``CHEAP_MS``), ¼×: the drag reaches 8× the largest sample,
  and memory extrapolated from samples that end at 2× missed a phase's slope change beyond
  them (an H100 Transformer from 32: 16, 32 and 64 measured, memory 1.17 % low on average and
  2.05 % at 16×; BENCHMARKS.md, session 15). A ½× that the user's code refuses ends the range
  below their batch only;
- then, up to ``reach``× the user's batch (the caller's: 16× on a GPU), twice the largest
  size: a GPU's cheap iterations afford it, and a curve measured to 4× missed how the time
  grows beyond (an H100's MLP from 32, measured to 128: 13.7 % low at 384, 7.7 % on average
  up to 16×; BENCHMARKS.md, session 16);
- then, where the caller asks (``between``: a GPU), halfway between two sizes a power of two
  apart (1.5×), the largest the budget affords first: a matmul-bound step's time between
  powers of two sits above the line through them (tile and wave quantization), so a curve
  through powers of two alone reads low everywhere else (an H100's MLP −3.4 … −5.6 % at 1.5,
  3, 6, 12×, ~0 % at powers of two, session 19; with halves, at 1.25, 2.5, 5, 10, 14×: MLP
  4.9 → 3.3 %, Transformer from 32 6.1 → 3.5 %, session 23; BENCHMARKS.md). Within the
  budget itself, not the rescue's allowance (they do not make a curve trusted), each at its
  expected cost scaled by what the sizes so far really cost over theirs (an H100's LSTM,
  whose peaks are tracked op by op over every time step, took its samples to 2.5–3.25× its
  profile without both);
- no more than ``budget_ms`` in all: a size whose expected cost (``_cost``: the peak's window
  and the timed iterations at the caller's precision, ``timed_ms``) would go beyond it is not
  measured (the caller: a few of the user's iterations, so that the whole profile stays within
  the cost bar; BENCHMARKS.md);
- a curve that cannot be trusted may spend ``RESCUE_SHARE`` of the budget beyond it: a refused
  curve costs the user the drag, more than a few iterations do. First on the wider range
  above; where the range cannot grow (the reach, memory or that allowance), the sample
  furthest from the curve is timed once more (``retime``, told what the curve through the
  other sizes expects there: ``WarmTrial.time_again`` keeps whichever of its two timings, or
  both merged, agrees with them), each at most once: a CPU's sample is 2–3 iterations, and on a
  shared machine two of them can both sit 20–40 % off (an LSTM's ½× read 25.4 ms beside
  22.9 ms at the user's 16; a plain loop: 18 and 21 ms). The user's batch too, where it is the
  one furthest off: the host's pace moves for seconds, and the headline may have been timed
  in another pace than every sample after it (issue 12's MLP in Notebook 7: 16 at 0.50 ms,
  its samples all ~30 % faster, 2 of 12 profiles refused; BENCHMARKS.md, session 29); timed
  again beside them, it tells by how much, and they are scaled to the headline (``_rebase``),
  which stays what the user's loop measured. The first such retime may go beyond
  that allowance when it costs under ``CHEAP_RETIME`` of the budget: on a GPU a sample is
  timed over ≥ 30 ms, the samples alone spend the budget, and one stalled block refused the
  example CNN's curve in 2 of 3 profiles on an H100 (its 16 read 9.42 ms, 3.2 ms in the
  others; BENCHMARKS.md, session 14) for want of one more ~30 ms block.

A size where the user's providers raise (``sampling.SizeFailed``) ends the extension on its side
of the user's batch, and the sizes kept are those measured (``Samples.refused``: the drag must
stop short of a size that fails, ``PerformanceModels.fails_at`` and ``fails_below``); where it
lies between two sizes that ran (a half: 9 for a step that splits its batch in pairs, from 6),
it ends no range and is kept apart (``Samples.between``), and no more halves are tried.

Each ``measure(n)`` measures the peak at n and then times n in a block of its own, its first
iteration (the one that faults new memory in) being the peak's. Imports no torch: the profiler
passes ``measure`` and its out-of-memory types, tests a scripted machine.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from skyline_nb.models.curve import FLAT, Curve
from skyline_nb.models.curve import fit_time as fit_curve
from skyline_nb.models.trust import fit_time
from skyline_nb.profiler.sampling import Refusal, SizeFailed, choose_sizes, memory_max

FIRST = (2,)
# The third size: ½× (choose_sizes tries sizes below the user's once those above are measured)
# when 2× grew clearly beyond the noise, else 4×, for a range where growth shows.
HALF, FAR = (2,), (4,)
FLAT_REACH = 64
CHEAP_MS = 5.0
# A size closer than this factor to the largest measured adds too little to extend the range.
MIN_STEP = 1.25
RESCUE_SHARE = 0.5
CHEAP_RETIME = 0.25


@dataclass
class Samples:
    """Peak bytes and iteration ms by batch size (the user's included), and why there are
    too few when there are (``choose_sizes``' sentence)."""

    peaks: dict[int, int]
    times: dict[int, float]
    reason: str | None = None
    refused: list[Refusal] = field(default_factory=list)  # where the providers raised
    # ... at a size between two that ran (a half): no end of the drag range, said apart
    between: list[Refusal] = field(default_factory=list)
    # the user's batch timed again beside the samples, over its headline; the other sizes'
    # times are divided by it (``_rebase``; 1.0: never)
    base: float = 1.0


def sample_curve(
    measure: Callable[[int], tuple[int, float]],
    user: int,
    user_peak: int,
    user_ms: float,
    capacity_bytes: int,
    *,
    oom_errors: tuple[type[BaseException], ...] = (MemoryError,),
    tolerance: float,
    budget_ms: float,
    timed_ms: Callable[[float], float],
    retime: Callable[[int, float | None], float] | None = None,
    reach: int = 4,
    between: bool = False,
) -> Samples:
    """Measure 2× and ½× the user's batch, then extend as the module says; never raises for
    an out-of-memory (``oom_errors``), which ends the extension. ``timed_ms(t)``: what timing
    a size whose iterations take t ms is expected to spend (``timing.Precision.quiet_ms``);
    ``retime(n, expected)``: n's time after more iterations there, ``expected`` the time the
    other sizes' curve says (None: samples are never timed again); ``reach``: the multiple of
    the user's batch the samples may extend to beyond 4× where the budget allows; ``between``:
    whether sizes halfway between measured powers of two follow once the range is measured."""
    found = Samples({user: user_peak}, {user: user_ms})
    start = time.perf_counter()
    estimated = 0.0  # what the sizes measured so far were expected to cost (``_cost_at``)

    def peak_at(n: int) -> int:
        nonlocal estimated
        try:
            peak, ms = measure(n)
        except SizeFailed as exc:
            found.refused.append(exc.refusal)
            raise
        found.times[n] = ms / found.base
        estimated += _cost_at(user_ms, ms, timed_ms)
        return peak

    first, _ = choose_sizes(peak_at, user, user_peak, capacity_bytes, oom_errors=oom_errors,
                            multiples=FIRST, max_points=2)
    # ½× when 2× grew; where there is none (batch 1: its profile once stopped at 1 and 2) or
    # the user's code refuses it (an even batch, batch norm at 1): 4×. 4× first where the
    # budget affords it: the drag and the sizes a user asks about lie above their batch, and
    # a line through ½–2× carried 4× beyond its samples multiplies their noise (module doc)
    def pace() -> tuple[float, float]:
        """ms spent so far, and how much more the sizes cost than their estimates (≥ 1)."""
        spent = 1000.0 * (time.perf_counter() - start)
        return spent, max(1.0, spent / estimated) if estimated > 0 else 1.0

    halves = user > 1 and _grows(first, found.times, user, tolerance)
    spent_ms, over = pace()
    far_first = halves and (spent_ms + over * _cost(found, user_ms, FAR[0] * user, timed_ms)
                            <= budget_ms)
    thirds = (FAR, HALF) if far_first else (HALF, FAR) if halves else (FAR,)
    for third in thirds:
        found.peaks, found.reason = choose_sizes(
            peak_at, user, user_peak, capacity_bytes, oom_errors=oom_errors, multiples=third,
            known=first, refused=list(found.refused))
        if found.reason is None or not found.refused:
            break
    retimed: set[int] = set()
    while found.reason is None:
        spent_ms, over = pace()
        sizes = sorted(found.peaks)
        curve, untrusted = fit_time(sizes, [found.times[n] for n in sizes], tolerance)
        allowed_ms = budget_ms * (1 + RESCUE_SHARE if untrusted else 1)
        # every size at what the sizes so far really cost over their estimates (``over``),
        # halves within the budget itself (the module's docstring)
        halfway = (partial(_affordable, found, user_ms, timed_ms, (budget_ms - spent_ms) / over)
                   if between else None)
        target = _next_size(found, curve, bool(untrusted), user, user_ms, reach, halfway,
                            half=far_first)
        target = None if target is None else _fits(target, found.peaks, capacity_bytes)
        target = None if target is None or _refused(found, target, user) else target
        if (target is None
                or spent_ms + over * _cost(found, user_ms, target, timed_ms) > allowed_ms):
            again = (_most_off(found, curve, user, retimed, tolerance)
                     if untrusted and retime is not None else None)
            if again is None:
                break
            # an untimed iteration and the timed ones, at what the other sizes expect there
            # (the measured time is the suspect one)
            expected = _expected(found, again, tolerance)
            at = found.times[again] if expected is None else expected
            again_ms = at + timed_ms(at)
            if spent_ms + again_ms > allowed_ms and (retimed
                                                     or again_ms > CHEAP_RETIME * budget_ms):
                break
            now_ms = retime(again, None if expected is None else expected * found.base)
            retimed.add(again)
            if again == user:
                _rebase(found, user, now_ms, expected, tolerance)
            else:
                found.times[again] = now_ms / found.base
            continue
        try:
            peak = peak_at(target)
        except SizeFailed:
            if min(found.peaks) < target < max(found.peaks):  # the sizes around it ran
                found.between.append(found.refused.pop())
            elif target < user:
                continue  # it ends the range below the user's batch, not the one above
            break
        except oom_errors:
            break
        if 0 < capacity_bytes < peak:
            break
        found.peaks[target] = peak
    found.times = {n: found.times[n] for n in found.peaks}
    found.peaks = dict(sorted(found.peaks.items()))
    return found


def _grows(peaks: dict[int, int], times: dict[int, float], user: int,
           tolerance: float) -> bool:
    """Whether the time at the other measured size differs from the user's by more than twice
    the tolerance (relative): a clear slope that a cheap ½× completes."""
    other = [n for n in peaks if n != user]
    if not other:
        return False
    return abs(times[other[0]] / times[user] - 1) > 2 * tolerance


def _next_size(found: Samples, curve: Curve, untrusted: bool, user: int, user_ms: float,
               reach: int, halfway: Callable[[int], bool] | None,
               half: bool = False) -> int | None:
    """The next size to measure (None: none); ``halfway``: which sizes between measured
    powers of two the budget affords (None: none are measured); ``half``: ½× is still to
    come (4× came before it)."""
    sizes = sorted(found.peaks)
    largest, smallest = sizes[-1], sizes[0]
    flat_reach = FLAT_REACH * user
    if curve.shape == FLAT:
        return 2 * largest if largest < flat_reach else None
    # The steepest piece should rest on two sizes beyond the last breakpoint (a bend measured
    # once beyond it puts the bend anywhere between), and an untrusted curve needs the range:
    # look once more beyond the largest.
    last_break = max(curve.breakpoints(), default=0.0)
    beyond = sum(n > last_break * (1 + 1e-9) for n in sizes)
    if (untrusted or beyond < 2) and largest < flat_reach:
        return 2 * largest
    if largest < 4 * user:
        return 4 * user
    if half and smallest > user // 2 and not _refused(found, user // 2, user):
        return user // 2
    if user_ms < CHEAP_MS and smallest > user // 4 >= 1 and not _refused(found, user // 4, user):
        return user // 4
    if largest < reach * user:
        return min(2 * largest, reach * user)
    return None if halfway is None else _halfway(sizes, user, halfway)


def _halfway(sizes: list[int], user: int, affordable: Callable[[int], bool]) -> int | None:
    """1.5× a measured size from the user's up whose double is the next measured one, the
    largest that is ``affordable`` (where the line's slope is decided); None: none left."""
    halves = [a * 3 // 2 for a, b in itertools.pairwise(sizes) if a >= user and b == 2 * a >= 4]
    return max(filter(affordable, halves), default=None)


def _refused(found: Samples, size: int, user: int) -> bool:
    """Whether ``size`` is a refused size or beyond one, on its side of the user's batch."""
    return any(size >= r.batch_size if r.batch_size > user else size <= r.batch_size
               for r in found.refused)


def _most_off(found: Samples, curve: Curve, user: int, retimed: set[int],
              tolerance: float) -> int | None:
    """The size furthest from the curve, relative, not yet timed again; None when every one
    was. The user's only where the other sizes, three or more, agree on a curve of their own
    (``_rebase``): else its headline, timed longest, is the one to believe."""
    others = sorted(n for n in found.peaks if n != user)
    user_too = (len(others) >= 3
                and not fit_time(others, [found.times[n] for n in others], tolerance)[1])
    left = [n for n in found.peaks if n not in retimed and (n != user or user_too)]
    return max(left, key=lambda n: abs(found.times[n] / curve(n) - 1), default=None)


def _rebase(found: Samples, user: int, now_ms: float, expected: float | None,
            tolerance: float) -> None:
    """The user's batch, timed again beside the samples in ``now_ms``, sits within
    ``tolerance`` of what the other sizes' curve ``expected`` there, where its headline does
    not: the machine's pace moved between the headline and the samples, which agree with each
    other. Their times are divided by that move (``Samples.base``, later sizes' too), so the
    curve keeps their shape through the headline, which stays what the user's loop measured
    (the report's iteration and its breakdown). Else nothing changes: the samples are timed
    again."""
    headline = found.times[user]
    if expected is None or not _near(now_ms, expected, tolerance) or _near(headline, expected,
                                                                           tolerance):
        return
    found.base = now_ms / headline
    for n in found.times:
        if n != user:
            found.times[n] /= found.base


def _near(ms: float, expected: float, tolerance: float) -> bool:
    return abs(ms / expected - 1) <= tolerance


def _expected(found: Samples, size: int, tolerance: float) -> float | None:
    """The time at ``size`` on the curve through the other measured sizes (None: too few)."""
    others = sorted(n for n in found.peaks if n != size)
    if len(others) < 2:
        return None
    return fit_curve(others, [found.times[n] for n in others], tolerance)(size)


def _affordable(found: Samples, user_ms: float, timed_ms: Callable[[float], float],
                left_ms: float, size: int) -> bool:
    return _cost(found, user_ms, size, timed_ms) <= left_ms


def _cost(found: Samples, user_ms: float, size: int,
          timed_ms: Callable[[float], float]) -> float:
    """What measuring ``size`` is expected to take (``_cost_at``), at ``expected_ms``."""
    return _cost_at(user_ms, expected_ms(found.times, size), timed_ms)


def expected_ms(times: dict[int, float], size: int) -> float:
    """An iteration at ``size`` as expected before it is measured: the time of the nearest
    measured size (``times``: ms by batch size), scaled by the batch above it."""
    near = min(times, key=lambda n: abs(n - size))
    return times[near] * max(1.0, size / near)


def _cost_at(user_ms: float, at_ms: float, timed_ms: Callable[[float], float]) -> float:
    """What measuring a size of ``at_ms`` iterations is expected to take: the peak's window
    and the timed iterations (``timed_ms``)."""
    return peak_window_ms(user_ms, at_ms) + timed_ms(at_ms)


def peak_window_ms(user_ms: float, at_ms: float) -> float:
    """The peak's window at a size of ``at_ms`` iterations, before its timed ones: an iteration
    on the user's inputs and one tracked at the size, about 1.5× its time."""
    return user_ms + 1.5 * at_ms


def _fits(target: int, peaks: dict[int, int], capacity: int) -> int | None:
    """``target``, or the largest size memory is predicted to allow when that is smaller;
    None when that adds too little beyond the largest measured."""
    largest = max(peaks)
    if target < largest:
        return target if target not in peaks else None
    allowed = memory_max(peaks, capacity)
    size = min(target, math.floor(allowed)) if math.isfinite(allowed) else target
    return size if size >= MIN_STEP * largest else None

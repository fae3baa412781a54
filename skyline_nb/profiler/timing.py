"""Timing uninstrumented iterations: one number per iteration, the median of the quiet ones.

Every iteration is timed on its own (``perf_counter_ns`` on CPU; a CUDA event pair per
iteration, read after one synchronize per chunk of three or more: ``Device.min_chunk``), and the
result is a median. A block mean is the wrong statistic on a shared machine: one preempted
iteration, a page-fault storm or an OpenMP worker that waited for a core moves it, while a
median over single iterations is what a plain training loop's typical iteration takes.

Iterations run in chunks of about ``CHUNK_MS``; around each chunk the CPU-wait counter
(``cpuwait``: how long this process's threads sat on a run queue) says whether another process
took the cores meanwhile. Iterations of a chunk that waited more than ``QUIET_WAIT`` of its
time are set aside while enough quiet ones come; a machine busy throughout (most iterations
waited) gets the median of everything, as a plain loop on that machine would. Where the counter
is unknown (macOS, Windows) every chunk counts as quiet.

The first iterations at a batch size the process has not run yet still fault new memory in
after the one that measured its peak (the heap settles over two or three: the example LSTM at
twice its batch faulted 645, 216, 28, 0 pages in its 2nd–5th iterations, 9–11 % slow in the 2nd
and 3rd at one thread; the CNN's 2nd 10–13 % at two threads; BENCHMARKS.md, session 36). So the
minor faults of each chunk are counted too, and leading iterations whose faults exceed
``FAULT_PAGES`` and fall by more than ``FAULT_FALL`` to the next are set aside as warm-up (at
most ``MAX_WARM``): a size that faults as much every iteration (blocks above glibc's mmap cap)
counts from its first, as it is what every iteration there costs. CPU only: on a GPU it was
never measured.

A CPU that has not run the step for a while runs it slowly for tens of milliseconds, without
faulting, the more so the longer it paused and at more than one thread: after 50 ms of other
work, the example MLP at 32 (1.5 ms) took +130, +45, +45 and +27 % in its first iterations at 2
threads and still +10–20 % 50–100 ms later (at one thread +125, +32, +14, +7 %, then none); a
pause of 5 ms slowed 3 iterations. A profile's headline follows an idle kernel and the memory
run, a sample its peak's tracked step: the MLP's headline read +12 … +17 % over a loop that had
stepped for 300 ms, +5 … +6 % with the warm-up (BENCHMARKS.md, session 51). So on a CPU,
where the first iteration takes less than ``WARM_BELOW_MS``, the step runs untimed first,
until its iterations stop getting faster and for at most the precision's ``warm_ms``; a longer
step's timing starts with its first iteration, as a slow one among 5 moves their median
little. How long the slow stretch lasts is the host's: ~100 ms, easing all along, on
session 51's; on session 54's two or three iterations (the MLP at 32 after 50 ms of Python:
+176, +29, +10 %, then steady; the CNN at 8 only its first, +21 %), where the whole
``warm_ms`` bought nothing (headlines within ±5 % of a warm loop with it and without it, at
1.4–10 ms steps) and cost up to 17 of a 9 ms step's iterations. So it runs in windows (10 ms
before the headline, 2 ms before a sample) and stops once two in a row are no faster than the
fastest before them: iterations still getting faster are seen window by window.

Known limitations: a median hides a real bimodal iteration (e.g. a data-dependent branch taken
every other step); the caller sees the spread in ``Timing.ms``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns
from skyline_nb.profiler.device import Device

try:
    import resource
except ImportError:  # Windows: no fault counter, every iteration counts
    resource = None

# A chunk whose threads waited for a CPU longer than this share of its time is set aside
# (quiet chunks wait far less, chunks stretched by another process far more: cpuwait.py).
QUIET_WAIT = 0.02
CHUNK_MS = 2.0
MAX_CHUNK = 64
# Warm-up by faults (module doc): pages an iteration may fault and count, the fall to the
# next iteration that marks it as still settling, and how many leading ones may be set aside.
FAULT_PAGES, FAULT_FALL, MAX_WARM = 64, 0.9, 3
# Warm-up by time (module doc): steps whose first timed iteration is shorter than this run
# untimed first, for at most their precision's ``warm_ms``: in windows of ``warm_ms`` /
# ``WARM_WINDOWS`` (at least ``WARM_WINDOW_ITERATIONS``), until ``SETTLED_WINDOWS`` in a row
# are no more than ``SETTLE_FALL`` faster than the fastest before them.
WARM_BELOW_MS = 10.0
WARM_WINDOWS, WARM_WINDOW_ITERATIONS, SETTLED_WINDOWS, SETTLE_FALL = 15, 2, 2, 0.03


@dataclass(frozen=True)
class Precision:
    """When a timing may stop: at least ``min_iterations`` quiet iterations lasting at least
    ``min_ms`` in all; iterations that waited for a CPU count against ``patience_ms`` (the
    time spent waiting for quiet ones, at least ``patience_iterations`` iterations' worth)."""

    min_iterations: int
    min_ms: float
    patience_ms: float
    patience_iterations: int
    warm_ms: float = 0.0  # untimed stepping first, for a CPU's short steps (module doc)

    def quiet_ms(self, iteration_ms: float, min_chunk: int, warms: bool = False) -> float:
        """What ``time_steps`` is expected to spend on iterations of ``iteration_ms`` on a quiet
        machine, in chunks as it takes them (the first of ``min_chunk``, then about
        ``CHUNK_MS``), counting at least three iterations: two that must agree often do not on
        a shared host. A sample's cost for the budget (``sample_plan``): a GPU's, timed at the
        headline's precision in chunks of three, is 6–9 of its iterations, not the 2–3 a CPU's
        takes (an H100's CNN from 8 sampled at 1.86× its profile's cost, bar 1.5×). ``warms``:
        a CPU's, whose short steps also run the first iteration and ``warm_ms`` untimed, and
        then chunks of about ``CHUNK_MS`` from the start (``warm_up_ms``)."""
        if iteration_ms <= 0:
            return 0.0
        warm = self.warm_up_ms(iteration_ms, warms)
        needed = max(3, self.min_iterations)
        count, chunk = 0, chunk_after(iteration_ms, min_chunk) if warm else min_chunk
        while count < needed or count * iteration_ms < self.min_ms:
            count += chunk
            chunk = chunk_after(iteration_ms, min_chunk)
        return warm + count * iteration_ms

    def warm_up_ms(self, iteration_ms: float, warms: bool = True) -> float:
        """What ``time_steps`` spends at most before it times iterations of ``iteration_ms`` (a
        CPU's, ``warms``): the first one and ``warm_ms`` where that is shorter than
        ``WARM_BELOW_MS`` (the warm-up stops sooner once the pace settles: ``_warm_up``), else
        nothing (the first iteration is timed)."""
        if not warms or self.warm_ms <= 0 or iteration_ms >= WARM_BELOW_MS:
            return 0.0
        return self.warm_ms + iteration_ms


# The headline: median of ≥ 5 quiet iterations over ≥ 30 ms. Samples at other batch sizes
# (after the first iteration at a size, which measured memory): ≥ 2 quiet ones that agree
# within AGREE, else a third, at least 10 ms of them for short ones (a sample's iterations cost
# 2–4 of the user's; single iterations on a shared machine vary by ±15 %). A CPU's short steps
# run first for up to 150 ms before the headline, which follows an idle kernel (a slow-down
# lasted 100 ms and more after 50 ms of pause on one host), and up to 30 ms before a sample,
# which follows the tracked step of its peak and its bookkeeping (10–20 ms: module doc).
HEADLINE = Precision(5, 30.0, 300.0, 8, warm_ms=150.0)
SAMPLE = Precision(2, 10.0, 200.0, 5, warm_ms=30.0)
AGREE = 0.10


@dataclass
class Timing:
    """Per-iteration times (ms) and which of them ran while the process waited for a CPU."""

    ms: list[float] = field(default_factory=list)
    waited: list[bool] = field(default_factory=list)
    faults: list[float] = field(default_factory=list)  # per iteration (a chunk's mean)

    def add(self, times: list[float], waited: bool, faults: float | None = None) -> None:
        self.ms.extend(times)
        self.waited.extend([waited] * len(times))
        if faults is not None and len(self.faults) == len(self.ms) - len(times):
            self.faults.extend([faults] * len(times))

    def warming(self) -> int:
        """How many leading iterations were still faulting new memory in (module doc)."""
        faults = self.faults if len(self.faults) == len(self.ms) else []
        k = 0
        while (k < MAX_WARM and k + 1 < len(faults) and faults[k] > FAULT_PAGES
               and faults[k + 1] < FAULT_FALL * faults[k]):
            k += 1
        return k

    def merged(self, other: Timing) -> Timing:
        """This timing's iterations and ``other``'s, each after its warm-up."""
        a, b = self.warming(), other.warming()
        return Timing(self.ms[a:] + other.ms[b:], self.waited[a:] + other.waited[b:])

    def kept(self) -> list[float]:
        """The iterations after the warm-up, quiet or not."""
        return self.ms[self.warming():]

    def quiet(self) -> list[float]:
        start = self.warming()
        return [ms for ms, w in zip(self.ms[start:], self.waited[start:], strict=True) if not w]

    @property
    def waited_count(self) -> int:
        return sum(self.waited)

    def settled(self, precision: Precision, busy: bool = False) -> bool:
        """Enough quiet iterations over enough time (fewer than 3 must agree within AGREE);
        with ``busy`` every iteration counts, as in ``result``'s median."""
        kept = self.kept()
        counted = kept if busy else self.quiet()
        if len(counted) < 3 and counted and max(counted) > (1 + AGREE) * min(counted):
            return False
        return len(counted) >= precision.min_iterations and sum(kept) >= precision.min_ms

    @property
    def busy(self) -> bool:
        """Most iterations waited for a CPU: another process's work is not a burst to set
        aside but the machine the user's loop runs on, whose plain median is a waited
        iteration too (the example MLP beside one spinning process at 2 threads: 3 quiet
        iterations of 24 read 2.4–3.0 ms, a plain loop 6.3–7.6 ms)."""
        return 2 * len(self.quiet()) < len(self.kept())

    def counted(self, precision: Precision, busy: bool | None = None) -> list[float]:
        """The iterations ``result`` is the median of: the quiet ones when there are enough and
        the machine was not ``busy`` (default: this timing's own ``busy``; a sample of 2–3
        iterations follows the headline's, which it is a ratio of), else all of them."""
        quiet = self.quiet()
        enough = max(1, math.ceil(precision.min_iterations / 2))
        busy = self.busy if busy is None else busy
        return quiet if len(quiet) >= enough and not busy else self.kept()

    def result(self, precision: Precision, busy: bool | None = None) -> float:
        """The median of the ``counted`` iterations."""
        return statistics.median(self.counted(precision, busy))

    def spread(self, precision: Precision) -> float:
        """How far apart the middle half of the ``counted`` iterations lie, (Q3 − Q1) / median:
        what a comparison with their median can tell from noise. Not max − min: one stall among
        a sub-millisecond step's 174 iterations read 175 % (session 31)."""
        counted = self.counted(precision)
        if len(counted) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(counted, n=4)
        return (q3 - q1) / statistics.median(counted)


def time_steps(step: Callable[[], Any], device: Device, precision: Precision,
               busy: bool = False) -> Timing:
    """Step and time single iterations, in chunks of about ``CHUNK_MS`` (at least the device's
    ``min_chunk`` iterations), until ``precision`` is met or its patience runs out (iterations
    that waited count against it). ``busy``: the result will be the median of every iteration
    (a sample after a headline whose steps mostly waited), so waiting for quiet ones buys
    nothing: every iteration counts towards ``precision`` (beside a spinner of the same session
    the samples waited out their patience, 5 iterations each, and took 26-37 of the user's
    iterations against a budget of 13; BENCHMARKS.md, session 25). On a CPU a step whose first
    iteration is shorter than ``WARM_BELOW_MS`` runs untimed for ``precision.warm_ms`` first
    (module doc)."""
    timing, fewest = Timing(), device.min_chunk
    known = 0.0  # ms of an iteration timed before the warm-up, which sizes the first chunk
    if device.kind == "cpu" and precision.warm_ms > 0:
        times, fraction, faults = timed_chunk(step, device, fewest)
        first = statistics.median(times)
        if precision.warm_up_ms(first) > 0:  # the rule the samples' budget counts by
            _warm_up(step, precision.warm_ms, first)
            known = first
        else:
            timing.add(times, fraction > QUIET_WAIT, faults)
    while _pending(timing, precision, busy):
        ms = statistics.median(timing.ms) if timing.ms else known
        n = chunk_after(ms, fewest) if ms > 0 else fewest
        times, fraction, faults = timed_chunk(step, device, n)
        timing.add(times, fraction > QUIET_WAIT, faults)
    return timing


def _warm_up(step: Callable[[], Any], ms: float, iteration_ms: float) -> None:
    """Step outside the timing until the iterations stop getting faster, for at most ``ms``
    (module doc): in windows of about ``ms`` / ``WARM_WINDOWS`` (at least
    ``WARM_WINDOW_ITERATIONS`` of ``iteration_ms``), until ``SETTLED_WINDOWS`` windows in a
    row have a median iteration no more than ``SETTLE_FALL`` below the fastest window's before
    them. Timed here, not by ``timed_chunk``: the timing's chunks (and the scripts that stand
    in for them in tests) are only the timed iterations."""
    end = time.perf_counter() + ms / 1e3
    n = max(WARM_WINDOW_ITERATIONS, math.ceil(ms / WARM_WINDOWS / max(iteration_ms, 1e-3)))
    fastest, settled = math.inf, 0
    while time.perf_counter() < end and settled < SETTLED_WINDOWS:
        window = []
        for _ in range(n):
            began = time.perf_counter()
            step()
            window.append(time.perf_counter() - began)
        median = statistics.median(window)
        settled = settled + 1 if median >= (1 - SETTLE_FALL) * fastest else 0
        fastest = min(fastest, median)


def chunk_after(iteration_ms: float, fewest: int) -> int:
    """Iterations in a chunk once they are known to take about ``iteration_ms``: about
    ``CHUNK_MS`` of them, at least ``fewest`` (the device's ``min_chunk``), at most
    ``MAX_CHUNK``."""
    return max(fewest, min(MAX_CHUNK, math.ceil(CHUNK_MS / iteration_ms)))


def _pending(timing: Timing, precision: Precision, busy: bool) -> bool:
    """Not settled, and the patience is not spent."""
    if timing.settled(precision, busy):
        return False
    return not timing.ms or sum(timing.ms) < _patience(precision, statistics.median(timing.ms))


def _patience(precision: Precision, iteration_ms: float) -> float:
    return max(precision.patience_ms, precision.patience_iterations * iteration_ms,
               precision.min_ms)


def timed_chunk(step: Callable[[], Any], device: Device,
                n: int) -> tuple[list[float], float, float | None]:
    """``n`` iterations, each with its own timer; the CPU-wait counter and, on a CPU, this
    process's minor faults (per iteration; None where unknown, and on a GPU, where the warm-up
    by faults was never measured) are read around them."""
    timers = [device.timer() for _ in range(n)]
    counted = device.kind == "cpu"
    before, faulted = waited_ns(), minor_faults() if counted else None
    for timer in timers:
        timer.start()
        step()
        timer.stop()
    device.synchronize()
    after, faults = waited_ns(), minor_faults() if counted else None
    times = [timer.elapsed_ms() for timer in timers]
    per_step = None if faults is None or faulted is None else (faults - faulted) / n
    return times, wait_fraction(before, after, sum(times)), per_step


def minor_faults() -> int | None:
    """Pages this process has faulted in so far (all threads), or None where unknown."""
    return None if resource is None else resource.getrusage(resource.RUSAGE_SELF).ru_minflt

"""Level 2: every op timed in situ, and the op times reconciled with the headline.

Instrumented runs of the warm trial (``operations.OperationTracker``: no other tracker rides
along, the memory run has them) give each op's time as the median over the quiet runs. Level 1
(the headline) and level 2 are measurements of the same step at different moments; where Σ op
times exceed the headline beyond the instrumentation's own cost, the two describe different
moments of a machine whose pace moved, so the op times are measured again, within a bound; what
still exceeds it is scaled to the headline (``fit_to_headline``: shares as measured), with a
warning.

The headline is never timed again for them. It used to be, whenever the op times still read
slow: a re-timing chosen because the machine was slow then is not a moment like any other, and
it moved the headline up by a median 15–22 % in the fifth of quiet profiles where it happened,
+3.3 … +4.6 % on average over all of them (example models, 2 and 1 threads; under a spinning
process −56 … +242 %); the first timing is the unbiased one (BENCHMARKS.md, session 17).
"""
from __future__ import annotations

import time
from typing import Any

from skyline_nb.export.units import format_ms
from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.iteration import IterationResult
from skyline_nb.profiler.operations import OperationTracker, merge_median
from skyline_nb.profiler.progress import Reporter
from skyline_nb.profiler.stacks import UserCode
from skyline_nb.profiler.timing import QUIET_WAIT

# Instrumented iterations; each op's time is the median over the quiet ones (those during which
# no other process kept this one's threads waiting for a CPU). One quiet run when it lasts at
# least LEVEL2_BUDGET_MS (its ops are long against the timers' noise; a run that waited is
# retried); short runs are repeated up to LEVEL2_MAX_RUNS within about that budget, so that a
# burst of other work cannot cover most of them. Always an odd number, so the median is one
# measured value. Runs that waited are retried for up to LEVEL2_PATIENCE_MS; then all count.
LEVEL2_MAX_RUNS, LEVEL2_BUDGET_MS, LEVEL2_PATIENCE_MS = 9, 10.0, 300.0
# Σ op times may exceed the uninstrumented iteration by this share before the two are taken to
# describe different moments of a busy machine (noise and ~2 µs of dispatch per op are below).
UNTRACKED_TOLERANCE = 0.10
# Σ op times beyond the iteration by less than this share is not worth a note: the untracked
# share of one step moves by about that much from profile to profile (the example models at 16,
# quiet, 4 profiles each: −6.3 … +5.8 % at one thread, −9.2 … +6.1 % at two; BENCHMARKS.md,
# session 50), and noting every small negative put the note on 19 of 32 profiles.
NOTED_EXCESS = 0.05
# Reconciling may take up to RECONCILE_ATTEMPTS runs and RECONCILE_SHARE times the first pass,
# then the op times are scaled to the headline: a GRU's instrumented runs (1.6–6 s each on a
# noisy host) made six attempts cost 25–31 s, past what a notebook user waits for (CI,
# 2026-11-25).
RECONCILE_ATTEMPTS, RECONCILE_SHARE = 6, 2.0
# Two quiet instrumented passes whose Σ op times agree within this share measured the same
# thing: an excess over the headline they share is systematic (a GRU over a packed sequence does
# more work under a dispatch mode), and measuring again would not remove it (0.5–1 s of a 5 s
# profile went to three more passes).
PASSES_AGREE = 0.10
# CUDA: the queue is held this many times the memory run's host time (four trackers; an op
# timing run has one) plus a margin before each instrumented run (``Device.hold_queue``): 13–26 %
# of a GPU profile (BENCHMARKS.md, session 12); ``benchmarks/cuda_hold.py`` tries shorter holds.
HOLD_FACTOR, HOLD_MARGIN_MS = 2.0, 5.0
# What the warning of a profile whose op times were scaled to its headline says (benchmarks
# look for it).
SCALED = "op times are scaled to the step"
# Ops that add up to more than this many steps were timed in moments far busier than the step's
# own: their shares are skewed too (on a busy 2-core host, ops summing to 13-65× the step read
# two identical blocks at 92 % and 8 %), so the note says so.
SKEWED = 2.0


def more_level2_runs(runs: list[tuple[float, bool]]) -> bool:
    """Whether to take another instrumented run after ``runs`` = [(wall ms, waited)]."""
    quiet = [wall for wall, waited in runs if not waited]
    # Patience bounds every case: with an even count of quiet runs and a busy machine, waiting
    # for one more quiet run took 1,007 runs and 30 s once (MLP under load, 2026-11-25).
    if sum(wall for wall, waited in runs if waited) >= LEVEL2_PATIENCE_MS:
        return False
    if not quiet:
        return True
    n = len(quiet)
    return n < LEVEL2_MAX_RUNS and (n % 2 == 0 or sum(quiet) < LEVEL2_BUDGET_MS)


def reconciled_op_times(
    level1: IterationResult, trial: Any, dev: Device, user_code: UserCode, memory_wall_ms: float,
    warnings: list[str], reporter: Reporter,
) -> tuple[OperationTracker, bool]:
    """The op times of the warm ``trial``, reconciled with ``level1``'s headline, which stays
    as measured (the module doc): the merged tracker, and whether its ops were scaled to the
    headline. ``memory_wall_ms``: the memory run's host time, which sets how long a GPU's
    queue is held before each run."""
    hold = HOLD_FACTOR * memory_wall_ms + HOLD_MARGIN_MS if dev.kind == "cuda" else 0.0
    busy = level1.timing.busy
    started = time.perf_counter()
    ops, starved = op_times(trial, dev, user_code, hold, warnings, reporter, busy)
    now = time.perf_counter()
    deadline = now + RECONCILE_SHARE * (now - started)
    previous_ms = ops.ops_ms()
    for _ in range(RECONCILE_ATTEMPTS):
        # Level 1 and level 2 measured at different moments of a machine whose pace moved
        # (another process holding the cores, a scheduler starving a worker thread for seconds,
        # a host's speed phases): measure the ops again, so that the breakdown describes the
        # step at the headline's pace where it can.
        if consistent(level1, ops) or time.perf_counter() > deadline:
            break
        ops, starved = op_times(trial, dev, user_code, hold, warnings, reporter, busy)
        agree = abs(ops.ops_ms() - previous_ms) <= PASSES_AGREE * previous_ms
        if not consistent(level1, ops) and not starved and agree:
            break  # two quiet passes alike: the excess is the instrumentation's, not a moment's
        previous_ms = ops.ops_ms()
    scaled = fit_to_headline(level1, ops, starved, warnings)
    if starved:
        warnings.append("the machine was busy while ops were timed: op times may be too high")
    return ops, scaled


def op_times(
    trial: Any, dev: Device, user_code: UserCode, hold_ms: float, warnings: list[str],
    reporter: Reporter, busy: bool = False,
) -> tuple[OperationTracker, bool]:
    """Instrumented runs (``more_level2_runs``), merged into per-op medians over the quiet ones;
    over all of them after a ``busy`` headline (most of its steps waited, and it is their
    median): runs of the busy machine are the moments it describes, and quiet ones are not
    waited for.

    Returns the merged tracker and whether every run waited for a CPU (its op times may then be
    inflated by other processes).
    """
    runs: list[tuple[OperationTracker, bool]] = []
    while more_level2_runs([(r.wall_ms, waited and not busy) for r, waited in runs]):
        # CUDA: held longer than the host needs to launch the instrumented iteration.
        reporter.stage(f"timing each op (run {len(runs) + 1})", 2, timed=True)
        run = OperationTracker(trial.model, dev, user_code, hold_ms=hold_ms)
        before = waited_ns()
        with run:
            trial.step()
        run.finish()
        runs.append((run, wait_fraction(before, waited_ns(), run.wall_ms) > QUIET_WAIT))
    starved = all(waited for _, waited in runs)
    chosen = [r for r, waited in runs if not waited or busy] or [r for r, _ in runs]
    if len(chosen) % 2 == 0:
        chosen = chosen[1:]  # an odd count: the median is one measured value
    if not merge_median(chosen[0], chosen[1:]):
        warnings.append("the steps ran different ops; op times come from one of them")
    return chosen[0], starved


def consistent(level1: IterationResult, ops: OperationTracker) -> bool:
    """Σ op times within UNTRACKED_TOLERANCE above the uninstrumented iteration."""
    return ops.ops_ms() <= level1.iteration_ms * (1 + UNTRACKED_TOLERANCE)


def fit_to_headline(level1: IterationResult, ops: OperationTracker, starved: bool,
                     warnings: list[str]) -> bool:
    """Scale op times that still exceed the headline after reconciling down to it; True if so.

    Both are measurements of the same step, but of different moments of a busy machine (the
    instrumented runs waited longer for a CPU than the headline's iterations), or the dispatch
    mode made the step slower than the plain one (a GRU over a packed sequence copies its
    weights at every time step under any mode: 72 more blocks of 554 KiB). Reported as they
    are, Σ ops beyond the headline makes the untracked time negative beyond any noise (−68 % and
    −259 % seen under a competing process, 2026-11-25); the headline is the step's time, so the
    breakdown keeps each op's measured share and takes its absolute time from the headline.
    """
    if consistent(level1, ops):
        return False
    ops_ms = ops.ops_ms()
    ops.scale(level1.iteration_ms / ops_ms)
    why = ("the machine was busier then" if starved else "the machine was busier then, or "
           "the profiler's dispatch mode made some ops slower")
    ratio = ops_ms / level1.iteration_ms
    shares = "their shares as measured" if ratio <= SKEWED else (
        f"their shares as measured, which at {ratio:.0f}× the step come from moments much busier "
        "than the step's own and may be far off too: read them as rough, or profile again when "
        "the machine is quieter")
    warnings.append(
        f"the ops timed one by one add up to {format_ms(ops_ms)}, more than the whole step "
        f"({format_ms(level1.iteration_ms)}): {why}; {SCALED}, {shares}"
    )
    return True


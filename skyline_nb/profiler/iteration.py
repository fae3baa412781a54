"""Level 1, the iteration: uninstrumented time per training iteration and peak memory.

These are the headline numbers (and the samples the performance models are fitted to), so no
hook, mode or timer runs inside the timed iterations. Warm-up first (≥ 3 iterations; more when
cudnn autotunes), then blocks of iterations timed as a whole: CUDA events around a block and ONE
synchronize, ``perf_counter_ns`` on CPU. Blocks repeat until the last two quiet blocks agree
within 5 %; their mean is the iteration time.

Quiet: this process's threads waited for a CPU less than 2 % of the block (``cpuwait.py``;
Linux). Another process competing for the cores stretches the blocks it lands on by 1.3–5×,
and the short blocks of a sample can agree with each other inside one burst, so such blocks are
set aside, with their own budget (≥ 1 s) for waiting the burst out; then the result is the
median of the blocks that waited least. Under a competing process spinning 50–400 ms at a time,
the CNN's sample at 2× its batch of 16 came out at 35.6–37.8 ms in every profile instead of
37–189 ms (``benchmarks/load.py``, BENCHMARKS.md "Load").

The extra batch sizes sampled for the performance models (``sampling.collect_samples``) are
measured with the leaner ``SAMPLE`` precision: a profile with predictions must cost at most
1.5× one without (issue 4), and three points at 1×, 2× and 4× the batch already cost about 2×
the iterations of the whole profile when time grows with the batch. So a sample's timing starts
right after the two tracked warm-ups (its first timed block counts), stops at the first two
blocks (of 10 ms, not 25) that agree or after one timed iteration of ≥ 50 ms, and has a sixth
of the headline's time budget. Its warm-ups are tracked by the allocator's events alone, so the
second one can be timed, and at ≥ 50 ms it is that one iteration (2 iterations per sample, not
3: the CNN's sampling at batch 32 went from 1.66× to 1.17× the profile). The headline number
keeps the full warm-up and budget.
CUDA samples keep the headline precision (25 ms blocks, full warm-up): GPU iterations of a few
ms cost little to time well, and on an H100 the time fits' error was 1.8–5.9 % with 25 ms sample
blocks but 5.7–61 % once they were cut to 10 ms (CNN from 32: 1.8 → 40.3 %), at a sampling cost
of 0.3–1.2× either way (BENCHMARKS.md, "Accuracy, GPU"; not yet re-measured on a GPU).

Peak memory: on CUDA the allocator's peak over model creation, warm-up and timing, minus what was
allocated before (the kernel's baseline). On CPU a live-storage tracker and the allocator's own
events run over model creation and the first two warm-up iterations only (the second already
has optimizer state and a full forward, so it reaches the steady-state peak); the timed
iterations run without them.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns
from skyline_nb.profiler.device import CPUOutOfMemoryError, Device, resolve_device
from skyline_nb.profiler.memory import LiveStorageTracker
from skyline_nb.profiler.providers import Trial, build_trial, load_providers
from skyline_nb.profiler.stacks import UserCode, default_project_root
from skyline_nb.report import Sample

TOLERANCE = 0.05
# A block whose threads waited for a CPU longer than this share of its time is set aside
# (quiet blocks: ≤ 0.3 %; blocks stretched by another process: 24-84 %; cpuwait.py).
QUIET_WAIT = 0.02
WAIT_PATIENCE_MS = 1000.0
MIN_WARMUP = 3
CUDNN_WARMUP = 6
MAX_BLOCKS = 12
TARGET_BLOCK_MS = 25.0
MAX_BLOCK_ITERATIONS = 64
MAX_TIMING_MS = 1500.0  # give up settling after this long (or 8 iterations), report the median


@dataclass(frozen=True)
class Precision:
    """How long level 1 may spend settling on one number."""

    max_blocks: int
    max_timing_ms: float
    min_budget_iterations: int  # the budget covers at least this many iterations
    first_block_counts: bool  # the first timed iteration is a block (else a last warm-up)
    enough_ms: float = math.inf  # one timed iteration this long settles it alone
    block_ms: float = TARGET_BLOCK_MS  # iterations per block: about this long
    # CPU: peak from the allocator's events alone (no live-storage tracker, whose Python
    # dispatch costs 5-37 % of an iteration), so the second warm-up can be timed and settle
    # the measurement when it is at least ``enough_ms`` (see _tracked_warmup).
    timed_warmup: bool = False


HEADLINE = Precision(MAX_BLOCKS, MAX_TIMING_MS, 8, first_block_counts=False)
# At most 4 blocks of ~10 ms and ~250 ms; one iteration of ≥ 50 ms is enough: on an idle CPU
# it varies by ~1-2 %, on a busy machine more blocks rarely settle anyway, and each timed
# iteration at 2× and 4× the batch costs 6 of the user's batch out of the 1.5× budget. Short
# blocks matter for tiny models (2 ms iterations), whose whole profile takes ~0.15 s.
SAMPLE = Precision(
    4, 250.0, 2, first_block_counts=True, enough_ms=50.0, block_ms=10.0, timed_warmup=True
)


@dataclass
class IterationResult:
    """What level 1 measured at one batch size."""

    batch_size: int
    iteration_ms: float
    peak_bytes: int
    block_means: list[float] = field(default_factory=list)
    converged: bool = True
    last_value: Any = None
    waited_blocks: int = 0  # blocks set aside because the process waited for a CPU

    @property
    def throughput(self) -> float:
        return 1000.0 * self.batch_size / self.iteration_ms if self.iteration_ms > 0 else 0.0

    def sample(self) -> Sample:
        return Sample(self.batch_size, self.iteration_ms, self.peak_bytes)


class Timed(NamedTuple):
    """One timed block: ms per iteration, the last iteration's value, and how much of the
    block this process's threads spent waiting for a CPU (``cpuwait``; 0 when unknown)."""

    ms: float
    value: Any
    waited: float = 0.0


def time_block(trial: Trial, device: Device, n: int) -> Timed:
    """``n`` iterations timed as a whole (the CPU-wait counter is read outside the timer)."""
    timer = device.timer()
    value = None
    before = waited_ns()
    timer.start()
    for _ in range(n):
        value = trial.step()
    timer.stop()
    device.synchronize()
    after = waited_ns()
    total_ms = timer.elapsed_ms()
    return Timed(total_ms / n, value, wait_fraction(before, after, total_ms))


@dataclass
class _Blocks:
    """The timed blocks of one measurement; a block that waited for a CPU is set aside.

    Settled: the last two quiet blocks (waited ≤ ``QUIET_WAIT`` of their time) agree. Else the
    result is the median of the blocks that waited no more than the least any block waited (+
    ``QUIET_WAIT``): on a machine that is busy throughout, e.g. more torch threads than free
    cores, every block waits about as much, and those blocks are its steady state.
    """

    blocks: list[Timed] = field(default_factory=list)

    def add(self, block: Timed) -> None:
        self.blocks.append(block)

    def quiet(self) -> list[float]:
        return [b.ms for b in self.blocks if b.waited <= QUIET_WAIT]

    def settled(self) -> bool:
        quiet = self.quiet()
        return len(quiet) >= 2 and agree(quiet[-2], quiet[-1])

    def result(self) -> float:
        if self.settled():
            return statistics.mean(self.quiet()[-2:])
        floor = min(b.waited for b in self.blocks)
        return statistics.median(b.ms for b in self.blocks if b.waited <= floor + QUIET_WAIT)

    def waited(self) -> int:
        return sum(b.waited > QUIET_WAIT for b in self.blocks)


def measure_level1(
    build: Callable[[], Trial],
    device: Device,
    batch_size: int,
    warmup: int = MIN_WARMUP,
    precision: Precision | None = None,
) -> IterationResult:
    """Build a fresh trial and measure it; raises the device's OOM types unchanged.

    ``precision`` None means ``SAMPLE`` for a CPU measurement while ``collect_samples`` runs
    (the measuring function it calls is the caller's, so this is how the extra samples learn
    they are extra), else ``HEADLINE`` (see the module docstring for why CUDA keeps it).
    """
    import torch

    if precision is None:
        precision = default_precision(device.kind)
    warmup = max(warmup, MIN_WARMUP)
    if device.kind == "cuda" and torch.backends.cudnn.benchmark:
        warmup = max(warmup, CUDNN_WARMUP)
    trial: Trial | None = None
    try:
        device.synchronize()
        baseline = device.memory_allocated()
        device.reset_peak()
        warm: Timed | None = None
        if device.kind == "cuda":
            trial = build()
            for _ in range(warmup - 1):
                trial.step()
        else:
            trial, peak, warm = _tracked_warmup(build, device, precision.timed_warmup)
            for _ in range(warmup - 3):
                trial.step()
        if warm is not None and warm.ms >= precision.enough_ms and warmup == MIN_WARMUP:
            first = warm  # the timed second warm-up settles it (Precision.timed_warmup)
        else:
            first = time_block(trial, device, 1)  # sizes the blocks
        value = first.value
        blocks = _Blocks()
        # A lone iteration is a block only where a block would be one iteration anyway.
        if precision.first_block_counts and block_size(first.ms, precision) == 1:
            blocks.add(first)
        converged = bool(blocks.quiet()) and first.ms >= precision.enough_ms
        spent, lost = first.ms, 0.0
        budget = max(precision.max_timing_ms, precision.min_budget_iterations * first.ms)
        mean = first.ms
        # Blocks that waited for a CPU count against a second budget, at least WAIT_PATIENCE_MS:
        # bursts of other work last hundreds of ms (a 250 ms budget gave up inside one, and a
        # sample at 2× took a 60 ms block for a 36 ms iteration); then the result is what was
        # seen.
        while not converged and len(blocks.quiet()) < precision.max_blocks and spent < budget:
            n = block_size(mean, precision)
            block = time_block(trial, device, n)
            value = block.value
            blocks.add(block)
            if block.waited > QUIET_WAIT:
                lost += block.ms * n
                if lost >= max(budget, WAIT_PATIENCE_MS):
                    break
                continue
            mean = block.ms
            spent += block.ms * n
            converged = blocks.settled()
        if not blocks.blocks:
            blocks.add(first)
        if device.kind == "cuda":
            peak = int(device.max_memory_allocated() or 0) - int(baseline or 0)
        return IterationResult(
            batch_size,
            blocks.result(),
            peak,
            [b.ms for b in blocks.blocks],
            converged,
            value,
            blocks.waited(),
        )
    except device.oom_types:
        trial = None
        device.free_memory(thorough=True)
        raise
    finally:
        del trial


def default_precision(device_kind: str) -> Precision:
    """``SAMPLE`` for a CPU measurement made while ``collect_samples`` runs, else ``HEADLINE``."""
    from skyline_nb.profiler.sampling import sampling_in_progress

    return SAMPLE if sampling_in_progress() and device_kind == "cpu" else HEADLINE


def _tracked_warmup(
    build: Callable[[], Trial], device: Device, timed: bool = False
) -> tuple[Trial, int, Timed | None]:
    """CPU: build + two iterations under the allocator's events and the live-storage tracker.

    The tracker enforces a memory budget as the iteration runs; the allocator's running sum
    adds what kernels allocate internally (invisible to a dispatch mode). The peak is the
    larger of the two; without the allocator events (a profiler already running), the tracker's.

    ``timed``: the allocator's events alone (their peak equalled max(tracker, allocator) to the
    byte for every example), and the second iteration is timed: the events cost ~1-3 % of an
    iteration (1-2 ms at 30-300 ms), the tracker 5-37 %. A budget is then checked after the
    iteration instead of during it. Returns the trial, the peak and the timed second
    iteration (None unless timed).
    """
    from skyline_nb.profiler import torch_private as tp

    try:
        allocator = tp.allocator_events_profiler()
        with warnings.catch_warnings(), tp.quiet_native_stderr():
            warnings.simplefilter("ignore", UserWarning)  # torch 2.11: profiler cycles notice
            allocator.__enter__()
    except RuntimeError:  # the user is profiling already: nested profilers are refused
        allocator = None
    timed = timed and allocator is not None
    tracker = None if timed else LiveStorageTracker(device.torch_device, device.memory_budget)
    second = None
    try:
        with tracker if tracker is not None else contextlib.nullcontext():
            trial = build()
            trial.step()
            if timed:
                second = time_block(trial, device, 1)
            else:
                trial.step()
    finally:
        if tracker is not None:
            tracker.close()
        if allocator is not None:
            with warnings.catch_warnings(), tp.quiet_native_stderr():
                warnings.simplefilter("ignore", UserWarning)
                allocator.__exit__(None, None, None)
    peak = tracker.peak if tracker is not None else 0
    if allocator is not None:
        peak = max(peak, tp.allocator_peak_bytes(allocator))
    if device.memory_budget is not None and peak > device.memory_budget:
        raise CPUOutOfMemoryError(
            f"the iteration needs {peak} bytes, more than the CPU memory budget of "
            f"{device.memory_budget} bytes"
        )
    return trial, peak, second


def block_size(iteration_ms: float, precision: Precision) -> int:
    """Iterations per block so a block lasts about ``precision.block_ms`` (re-sized after each)."""
    wanted = math.ceil(precision.block_ms / max(iteration_ms, 1e-3))
    return max(1, min(MAX_BLOCK_ITERATIONS, wanted))


def agree(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(a, b)


def measure_iteration(
    model_provider: Callable[[], Any],
    input_provider: Callable[..., Any],
    iteration_provider: Callable[[Any], Callable[..., Any]],
    batch_size: int,
    device: Any = None,
) -> Sample:
    """One uninstrumented, isolated measurement at ``batch_size`` (the sampling building block).

    Raises the device's OOM type (``torch.OutOfMemoryError`` on CUDA, ``CPUOutOfMemoryError``
    when a CPU ``memory_budget`` is exceeded) when the batch does not fit.
    """
    from skyline_nb.profiler.session import isolated

    dev = resolve_device(device)
    user_code = UserCode(default_project_root(model_provider))
    providers = load_providers(model_provider, input_provider, iteration_provider, user_code)
    with isolated(dev):
        result = measure_level1(lambda: build_trial(providers, batch_size, dev), dev, batch_size)
    return result.sample()

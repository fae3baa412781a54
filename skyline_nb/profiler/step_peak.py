"""One iteration's peak memory beyond what was alive when it began (``step_peak``).

``WarmTrial.peak_at`` measures a batch size n by what one iteration there adds at its peak,
in the same way as at the user's batch, so that everything the trial keeps between iterations
cancels (``iteration.py``). On CUDA it is the allocator's peak over the second iteration on
new inputs; on CPU the running sum of the CPU allocator's own reports (which see what kernels
allocate for themselves), or a live-storage tracker's peak where a profiler of the user's
already runs. Both allocators' peaks are split by the step's phases (``phases.py``).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any, NamedTuple

from skyline_nb.export.units import format_bytes
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.memory import LiveStorageTracker
from skyline_nb.profiler.phases import FIRST, LABELS, CudaPhasePeaks, PhaseMarks
from skyline_nb.profiler.providers import Inputs, Trial


class MeasuredStep(NamedTuple):
    """``step_peak`` of one iteration, its return value, and its peak per phase (``phases.py``;
    empty where the phases are not marked: a profiler of the user's running on CPU)."""

    added: int
    value: Any
    by_phase: dict[str, int]


def measured_step(
    trial: Trial, device: Device, inputs: Inputs, during: Any = None
) -> MeasuredStep:
    """One iteration on ``inputs`` (the trial keeps them): the bytes it allocates at its peak
    beyond what was alive when it started (``step_peak``), its return value and its peak per
    phase; ``during``: a context manager (e.g. trackers) active over that iteration only.

    CUDA: the allocator's peak over the second iteration on the inputs (the first may choose
    kernels) minus what was allocated before it, read at each phase's start. CPU: the peak of
    the running sum of the CPU allocator's reports over an iteration on the inputs (a
    live-storage tracker's when a profiler of the user's already runs). The allocator reports
    the free of a block only if it knows the block's size, which it keeps for blocks allocated
    while it reported, or while ``allocator_reports.sizes_kept`` has it keep them without
    reporting (~5 ms less per sample of a ConvNeXt stepped by AdamW, whose ~2,000 reports an
    iteration were read and dropped): so one iteration runs so first, and everything the
    measured one frees was allocated there (unless the trial keeps a block for two iterations
    or more). Where the trial's last iteration ran under the reports on the same inputs
    (``Trial.sizes_known_through``: the memory run right after level 1's window), that one is
    it (one iteration of the user's less). That one is on the old inputs, also for
    a smaller batch, where the new ones cost less (a ½× sample's peak took 1.5–1.9 of the user's
    iterations instead of 1.7–2.3 for the example CNN, Transformer and LSTM, BENCHMARKS.md,
    session 22): what a step keeps between iterations that grows with its batch (a model's
    hooks holding its outputs) is then the user's batch's when the measured one starts, as the
    sample's shift takes it, not already the new size's (that ¼× sample read +7.3 %). The new
    inputs take over the old ones' gradients (``Trial.take_over_grads``): an input's own
    ``.grad`` is then there when the measured iteration starts, as in a loop at that size
    (measuring the second iteration on the new inputs instead cost a 2× sample one more of the
    user's iterations, session 37).
    """
    around = during if during is not None else contextlib.nullcontext()
    if device.kind == "cuda":
        trial.use_inputs(inputs)
        trial.step()
        device.synchronize()
        before = int(device.memory_allocated() or 0)
        device.reset_peak()
        phases = CudaPhasePeaks(device, before)
        with gc_paused(), around, PhaseMarks(trial.model, phases.mark):
            value = trial.step()
        device.synchronize()
        by_phase = phases.close()
        return MeasuredStep(max(by_phase.values()), value, by_phase)
    from skyline_nb.profiler.allocator_reports import sizes_kept

    before = trial.input_tensors
    if trial.sizes_known_through != trial.steps:
        with sizes_kept() as kept:
            if kept:
                trial.step()
                trial.sizes_known_through = trial.steps
    with allocator_events() as allocator:
        if trial.sizes_known_through != trial.steps:  # the reports keep them instead
            trial.step()
        trial.use_inputs(inputs)
        trial.take_over_grads(before)
        if allocator is None:
            tracker = LiveStorageTracker(device.torch_device)
            try:
                with gc_paused(), tracker, around:
                    value = trial.step()
            finally:
                tracker.close()
            return MeasuredStep(tracker.peak, value, {})
        mark()
        with gc_paused(), around, PhaseMarks(trial.model):
            value = trial.step()
        trial.sizes_known_through = trial.steps
    return measured_from(allocator, value)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic collector held over a measured window. Garbage from before it (an earlier
    profile's trial, the user's earlier models in reference cycles) that a collection frees
    inside the window counts there as frees and lowers the measured peak: a weight-normed
    model's sample at 64 read 546 KB instead of 627 KB in 3 of 10 profiles after a plain loop.
    Garbage the window itself makes in cycles stays until it ends (counted: a plain loop may
    hold it as long). A full collection first would cost ~0.25 s (``Device.free_memory``).
    The young generations are collected on the way out: deferred, that collection landed in
    the next timed iteration instead (a GPT-2's samples scattered to R² 0.87, dragging off, in 2
    of 3 kernel tests; 0 of 8 with it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.collect(1)
            gc.enable()


def measured_from(allocator: Any, value: Any) -> MeasuredStep:
    """The iteration after the last marker between iterations, from the allocator's reports
    (its phases marked by ``PhaseMarks``): the running sum's peak per phase and overall."""
    phases = allocator.peaks(after_bytes=MARK_BYTES, labels=LABELS, first=FIRST)
    return MeasuredStep(max(phases.values()), value, phases)


# An allocation of this odd size separates two iterations in the allocator's reports.
MARK_BYTES = 4093


def mark(nbytes: int = MARK_BYTES) -> None:
    """An allocation of ``nbytes`` (odd: no iteration allocates it) in the CPU allocator's
    reports, freed at once: a marker its readers find by size. Made outside the dispatch
    modes, as ``phases.py``'s are: level 1's live-storage tracker (on under a memory budget)
    counted its markers, and its peak, the larger of the two, read 24,157 B for a 22,120 B
    step ("other" +2,037 B)."""
    import torch

    with tp.outside_modes():
        torch.empty(nbytes, dtype=torch.uint8)


@contextlib.contextmanager
def allocator_events(paired: bool = False) -> Any:
    """The CPU allocator's reports over the block (None when a profiler of the user's runs:
    torch refuses nested profilers); ``paired``: frees only of blocks allocated in it
    (``AllocatorReports``).

    File descriptor 2 is silenced meanwhile: torch logs "Memory block of unknown size was
    allocated before the profiling started" from C++ at every 1000th free of an older block,
    which is this module's normal case and would land in the notebook. Known limitation: what
    the user's own native code writes to stderr in these few iterations is dropped too.
    """
    from skyline_nb.profiler.allocator_reports import AllocatorReports, quiet_native_stderr

    with quiet_native_stderr():
        allocator: AllocatorReports | None = AllocatorReports(paired)
        try:
            allocator.__enter__()
        except RuntimeError:
            allocator = None
        try:
            yield allocator
        finally:
            if allocator is not None:
                allocator.__exit__(None, None, None)


# Two batches' step peaks that differ by at least this share of the larger, and these bytes
VARYING_SHARE, VARYING_BYTES = 0.01, 1024


def varying_warning(batch_size: int, peaks: tuple[int, int] | None) -> str | None:
    """What two batches of the user's size whose iterations peaked differently mean: each
    other size is measured on one batch (``measure_level1`` steps the trial's own batch and
    then the reference's, and ``step_peak`` of each is read). A branch on ``x.mean() > 0`` read
    −12 … +23 % at the samples against fresh measurements, routed experts 35 % between two
    batches; a sparse embedding's gradient 0.8 % (not said: within ``VARYING_SHARE``). The time
    varies with the work too: a GRU over random sequence lengths was predicted 2,353 samples/s
    at 256, measured 5,194 there, and plain loops of other batches ran 3,357–4,214
    (BENCHMARKS.md, session 55)."""
    if peaks is None:
        return None
    low, high = sorted(peaks)
    if high - low < max(VARYING_BYTES, VARYING_SHARE * high):
        return None
    return (
        f"two batches of {batch_size} peaked at {format_bytes(low)} and {format_bytes(high)} "
        "above what their iterations began with: what the step does depends on the values in "
        "its batch (a branch on a value, experts chosen per token), on chance (a random "
        "depth) or on how many times it ran (an optimizer stepping at every second call, "
        "gradients accumulated in between). Each other batch size is measured on one batch, "
        "so the curves are one draw per size: memory may be off by about "
        f"{format_bytes(high - low)} elsewhere, and time by as much as the step's work varies "
        "(a measurement at another size is one more draw)"
    )

"""Level 1, the iteration: uninstrumented time per training iteration and peak memory.

These are the headline numbers and the samples the performance models are fitted to, so no
hook, mode or timer runs inside a timed iteration (``timing.py``: the median of single
iterations, the quiet ones first).

One fresh trial (model, optimizer, inputs) serves the whole profile: built and stepped twice
while memory is tracked (the second iteration has gradients and optimizer state, so it reaches
the steady-state peak), stepped a third time on fresh inputs in the same window (the user's
``step_peak``, below), then timed; the other batch sizes and the instrumented levels reuse it
warm, with new inputs for each size. A fresh model per measurement would pay a new model's
first iteration each time, and time iterations that still fault memory in.

Peak memory of a fresh trial: on CUDA the allocator's peak over creation, warm-up and timing,
minus what was allocated before (the kernel's baseline); on CPU the larger of a live-storage
tracker and the CPU allocator's own reports over creation and the first iterations.
Peak memory at another batch size n on the warm trial: what one iteration adds at its peak over
what was alive when it began (``step_peak``), measured in the same way at n and at the user's
batch u, right after new inputs were given, so

    peak(n) = peak(u) + step_peak(n) − step_peak(u) + inputs(n) − inputs(u),

inputs counting the gradients the step leaves in inputs that require grad (``Trial``), which
new inputs take over (zeroed) before their measured step, as a loop's would have them.

Whatever the trial keeps between iterations apart from its inputs (weights, gradients, optimizer
state, the user's caches) cancels; so does what the CPU allocator does not report (frees of
blocks allocated before a window). Known limitation: state kept between iterations that grows
with the batch (e.g. the last batch's outputs held by the iteration) is not counted at n.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from skyline_nb.categories import Categories
from skyline_nb.profiler.device import CPUOutOfMemoryError, Device
from skyline_nb.profiler.errors import in_bytes
from skyline_nb.profiler.memory import LiveStorageTracker, named_tensors
from skyline_nb.profiler.peak import PeakTracker
from skyline_nb.profiler.phases import LABELS, PhaseMarks, shifted
from skyline_nb.profiler.providers import Inputs, Trial
from skyline_nb.profiler.retained import READINGS, Readings, take_readings
from skyline_nb.profiler.step_peak import (
    MARK_BYTES,
    MeasuredStep,
    allocator_events,
    gc_paused,
    mark,
    measured_from,
    measured_step,
)
from skyline_nb.profiler.timing import HEADLINE, SAMPLE, Precision, Timing, time_steps
from skyline_nb.report import Sample

MIN_WARMUP = 3
CUDNN_WARMUP = 6


@dataclass
class IterationResult:
    """What level 1 measured at one batch size."""

    batch_size: int
    iteration_ms: float
    peak_bytes: int
    timing: Timing = field(default_factory=Timing)
    converged: bool = True
    # bytes each iteration kept alive beyond the one before (``retained.py``; 0: none), and
    # the containers of the step's that grew with them
    kept_per_step: int = 0
    kept_by: list[str] = field(default_factory=list)
    # ``step_peak`` of two batches of this size (CPU, where a reference is measured): they
    # differ where the step's work depends on its batch (``step_peak.varying_warning``)
    batch_peaks: tuple[int, int] | None = None

    @property
    def throughput(self) -> float:
        return 1000.0 * self.batch_size / self.iteration_ms if self.iteration_ms > 0 else 0.0

    @property
    def waited(self) -> bool:
        """The steps timed here waited for a CPU: too few quiet ones came (not ``converged``),
        or most of them waited (``Timing.busy``: the median is then of waited steps, the pace
        of the busy machine). The issue's MLP at 2 threads beside a spinner of its own session:
        17-24 of 22-29 steps waited, yet the 5 quiet ones settled the timing, at 6.4-6.9 ms where
        one thread ran the step in 2.8-3.2 ms (BENCHMARKS.md, session 25)."""
        return not self.converged or self.timing.busy

    def sample(self) -> Sample:
        return Sample(self.batch_size, self.iteration_ms, self.peak_bytes)


@dataclass
class SampleTiming:
    """Level 1 at another batch size, relative to the user's: ``ratio`` = its median iteration
    over the user's median in the same rounds."""

    batch_size: int
    ratio: float
    timing: Timing
    converged: bool


@dataclass
class WarmTrial:
    """The profile's one trial, kept warm, and the user's batch it was measured at.

    ``peak_at(n)`` measures the peak at batch size n and ``time_at(n)`` times it right after
    (the samples of the performance models); ``reference()`` measures the user's batch first.
    """

    trial: Trial
    device: Device
    inputs_for: Callable[[int], Inputs]
    user: IterationResult
    user_step_peak: int = 0
    user_input_bytes: int = 0
    user_inputs: Inputs = ((), {}, [])
    categories_at: dict[int, Categories] = field(default_factory=dict)  # by ``peak_at``
    # peak bytes per phase (``phases.py``) at the user's batch and, by ``peak_at``, at others;
    # empty where the phases are not marked
    user_phases: dict[str, int] = field(default_factory=dict)
    phases_at: dict[int, dict[str, int]] = field(default_factory=dict)
    last_inputs: tuple[int, Inputs] | None = None  # peak_at's, until time_at takes them
    # the memory run's ``measured_step`` at the user's batch, under its dispatch modes, without
    # its value (None: not run)
    tracked: MeasuredStep | None = None

    def peak_at(self, batch_size: int, categorize: bool = True) -> int:
        """Peak bytes of one iteration at ``batch_size``, and what was alive then
        (``categories_at``, unless ``categorize`` is false: following every storage costs
        about an iteration of the user's, and only the largest sizes' categories are drawn);
        raises the device's OOM types when it does not fit, and what the user's code raises
        (the trial goes back to the user's inputs either way)."""
        sample_inputs = self.inputs_for(batch_size)
        model = self.trial.model
        tracker = (PeakTracker(self.device.torch_device,
                               named_tensors(model, sample_inputs[2], []))
                   if categorize else None)
        try:
            added, _, by_phase = measured_step(self.trial, self.device, sample_inputs, tracker)
            shift = (self.user.peak_bytes - self.user_step_peak
                     + self.trial.held_input_bytes() - self.user_input_bytes)
            peak = shift + added
            if by_phase and self.user_phases:
                self.phases_at[batch_size] = shifted(by_phase, shift)
            if tracker is not None:
                snapshot = tracker.categorized(added, model, sample_inputs[2])
                self.categories_at[batch_size] = Categories.at_peak(peak,
                                                                    snapshot.by_category)
        except Exception as exc:  # out of memory, or the user's code raised at this size
            self.trial.use_inputs(self.user_inputs)
            del sample_inputs
            if isinstance(exc, self.device.oom_types):
                self.device.free_memory(thorough=True)
            raise
        finally:
            if tracker is not None:
                tracker.close()
        self.trial.use_inputs(self.user_inputs)
        self.last_inputs = (batch_size, sample_inputs)  # for time_at: the same tensors
        budget = self.device.memory_budget
        if self.device.kind == "cpu" and budget is not None and peak > budget:
            raise CPUOutOfMemoryError(
                f"batch size {batch_size} needs {peak} bytes, more than the CPU memory "
                f"budget of {budget} bytes")
        return peak

    def runs_at(self, batch_size: int) -> None:
        """One plain iteration at ``batch_size``, neither timed nor measured: whether the user's
        code runs there (it raises what they raise, ``ProviderError``). The trial goes back to
        the user's inputs either way."""
        try:
            self.trial.use_inputs(self.inputs_for(batch_size))
            self.trial.step()
        finally:
            self.trial.use_inputs(self.user_inputs)

    def time_at(self, batch_size: int, precision: Precision = SAMPLE) -> SampleTiming:
        """Time ``batch_size`` in a block of its own, right after ``peak_at`` ran its first
        iteration there (so no timed iteration is the first at its size, which faults new
        memory in): what a training loop at that size does. Switching sizes every iteration
        instead makes every timed iteration pay page faults a plain loop never pays, more for
        larger sizes (BENCHMARKS.md). ``ratio`` is over the user's headline median."""
        size, inputs = self.last_inputs or (None, None)
        self.last_inputs = None
        timing = self._timed(inputs if size == batch_size else self.inputs_for(batch_size),
                             precision)
        return self._sample(batch_size, timing, precision)

    def time_again(self, earlier: SampleTiming, precision: Precision = SAMPLE,
                   expected: float | None = None) -> SampleTiming:
        """``earlier``'s size timed once more, merged with ``earlier``'s iterations: the median
        of both, so that a few slow iterations in either are outvoted. With ``expected`` (a
        ratio of the headline: what the curve through the other sizes says here), the one of
        the first timing, the second and both merged that is closest to it: two timings of one
        size that disagree are settled by the other sizes, not split (a GPU host's stall slowed
        a whole 30 ms block 3×, whose iterations would outvote a good block's as often as not)."""
        more = self._timed(self.inputs_for(earlier.batch_size), precision, untimed=1)
        timing = earlier.timing.merged(more)
        merged = self._sample(earlier.batch_size, timing, precision)
        if expected is None or expected <= 0:
            return merged
        again = self._sample(earlier.batch_size, more, precision)
        return min((merged, earlier, again), key=lambda s: abs(math.log(s.ratio / expected)))

    def time_users_batch(self, precision: Precision = SAMPLE) -> SampleTiming:
        """The user's batch timed again as a sample is, beside the others (after an untimed
        iteration: the sizes before it left the allocator another shape), over its headline."""
        return self._sample(self.user.batch_size,
                            self._timed(self.user_inputs, precision, untimed=1), precision)

    def _timed(self, inputs: Inputs, precision: Precision, untimed: int = 0) -> Timing:
        """Iterations on ``inputs``, after ``untimed`` ones (new input tensors: the first
        iteration on them faults memory in, ``time_at``'s reason); back to the user's after."""
        trial = self.trial
        trial.use_inputs(inputs)
        try:
            for _ in range(untimed):
                trial.step()
            return time_steps(trial.step, self.device, precision, busy=self.user.timing.busy)
        finally:
            trial.use_inputs(self.user_inputs)

    def _sample(self, batch_size: int, timing: Timing, precision: Precision) -> SampleTiming:
        """A ratio of the headline, quiet iterations or all as the headline's were."""
        ms = timing.result(precision, busy=self.user.timing.busy)
        return SampleTiming(batch_size, ms / self.user.iteration_ms, timing,
                            timing.settled(precision))

    def reference(self, inputs: Inputs, measured: MeasuredStep | None = None) -> None:
        """Take ``inputs`` at the user's batch and ``step_peak`` on them: ``measured`` when the
        tracked warm-up measured it, else measured here (as ``peak_at`` does)."""
        if measured is None:
            measured = measured_step(self.trial, self.device, inputs)
        self.user_inputs, self.user_step_peak = inputs, measured.added
        self.user_input_bytes = self.trial.held_input_bytes()
        if measured.by_phase:
            self.user_phases = shifted(measured.by_phase, self.user.peak_bytes - measured.added)


def measure_level1(
    build: Callable[[], Trial],
    device: Device,
    batch_size: int,
    warmup: int = MIN_WARMUP,
    precision: Precision = HEADLINE,
    inputs_for: Callable[[int], Inputs] | None = None,
    before_timing: Callable[[WarmTrial], None] | None = None,
) -> tuple[IterationResult, WarmTrial]:
    """Build a fresh trial, measure it, and hand it back warm; raises the device's OOM types
    unchanged. ``inputs_for(n)`` makes inputs for batch size n (for ``WarmTrial.peak_at``;
    None: the trial keeps its inputs and cannot change size). ``before_timing`` runs on the
    warm trial before its headline is timed: a ``measured_step`` there follows the warm-up's
    iteration under the allocator's reports and needs no iteration of its own first."""
    import torch

    warmup = max(warmup, MIN_WARMUP)
    if device.kind == "cuda" and torch.backends.cudnn.benchmark:
        warmup = max(warmup, CUDNN_WARMUP)
    trial: Trial | None = None
    try:
        device.make_library_workspaces()
        # before the baseline: the trial builds its own inputs inside the window, and a user's
        # loop holds one set (on CUDA the reference's counted too, as "other": 0.7–7.5 % of
        # the peak, as much as "inputs" in every model; CPU's window starts later anyway)
        reference = Reference(inputs_for(batch_size)) if inputs_for is not None else None
        device.synchronize()
        baseline = device.memory_allocated()
        device.reset_peak()
        if device.kind == "cuda":
            trial = build()
            device.reset_peak()  # the steps' peak over what the trial holds: _tracked_warmup
            readings = Readings(trial, device)
            for _ in range(max(warmup - 1, READINGS)):
                trial.step()
                readings.after_step()
            peak = int(device.max_memory_allocated() or 0) - int(baseline or 0)
        else:
            trial, peak, readings = _tracked_warmup(build, device, reference)
        result = IterationResult(batch_size, 0.0, peak)
        if reference is not None and reference.measured and reference.own_added is not None:
            result.batch_peaks = (reference.own_added, reference.measured.added)
        result.kept_per_step, result.kept_by = readings.kept(peak)
        warm = WarmTrial(trial, device, inputs_for or _fixed_inputs(trial, batch_size), result)
        if reference is not None:
            warm.reference(reference.inputs, reference.measured)
        if before_timing is not None:
            before_timing(warm)
        timing = time_steps(trial.step, device, precision)
        result.iteration_ms, result.timing = timing.result(precision), timing
        result.converged = timing.settled(precision)
        return result, warm
    except device.oom_types:
        trial = None
        device.free_memory(thorough=True)
        raise


def _fixed_inputs(trial: Trial, batch_size: int) -> Callable[[int], Inputs]:
    inputs = (trial.args, trial.kwargs, trial.input_tensors)

    def same(n: int) -> Inputs:
        if n != batch_size:
            raise ValueError("this trial cannot change its batch size (no input provider)")
        return inputs

    return same


@dataclass
class Reference:
    """Fresh inputs at the user's batch, and ``measured_step`` on them once measured."""

    inputs: Inputs
    measured: MeasuredStep | None = None
    # ``step_peak`` of the iteration before, on the trial's own inputs (another batch of the
    # same size): where the two differ, the step's work depends on its batch or on chance
    own_added: int | None = None


# Allocations of these odd sizes end the trial's building and start the second iteration on
# its own inputs in the CPU allocator's reports (retained.py marks with 4081, phases.py with
# 4085–4091, step_peak.py with 4093)
BUILT_BYTES, BUILD, STEPS, OWN_BYTES = 4079, "build", "steps", 4083


def _tracked_warmup(
    build: Callable[[], Trial], device: Device, reference: Reference | None = None
) -> tuple[Trial, int, Readings]:
    """CPU: build + two iterations under the allocator's reports (what kernels allocate inside
    is reported too, which a dispatch mode cannot see) and, where a memory budget must stop
    the iteration as it runs or the reports are refused (a profiler of the user's runs), a
    live-storage tracker; the peak is the larger of the two.

    With a ``reference``, a third iteration on its inputs in the same window gives
    ``step_peak`` at the user's batch (and its peak per phase) as ``measured_step`` measures
    it: after an iteration under the reports, so every block the measured one frees was
    reported when allocated. Also returns what was alive after each iteration
    (``retained.Readings``; no bytes without the reports).
    """

    with allocator_events(paired=True) as allocator, gc_paused():
        use_tracker = allocator is None or device.memory_budget is not None
        tracker = LiveStorageTracker(device.torch_device, device.memory_budget)
        try:
            with tracker if use_tracker else contextlib.nullcontext():
                trial = build()
                # the peak is the steps', over what the built trial holds: building a model
                # can take more for a moment (pruning's mask: the weights' magnitudes and a
                # top-k over them) than its steps, and a user's loop builds it once (a pruned
                # MLP's peak read 1.46 MB at batch 16 and at 64, its steps' 1.36 and 1.39)
                mark(BUILT_BYTES)
                tracker.restart_peak()
                readings = Readings(trial, device)
                trial.step()
                readings.after_step()
                if reference is not None:
                    mark(OWN_BYTES)  # the second iteration on the own batch: ``own_added``
                trial.step()
                readings.after_step()
                if reference is not None and allocator is not None:
                    # the trial's own inputs stay alive until the last reading, so that the
                    # bytes alive after the third iteration differ by what it kept only
                    own_inputs = (trial.args, trial.kwargs, trial.input_tensors)
                    trial.use_inputs(reference.inputs)
                    trial.take_over_grads(own_inputs[2])
                    mark()
                    with PhaseMarks(trial.model):
                        value = trial.step()
                    readings.after_step()
                    del own_inputs
                if allocator is not None:
                    trial.sizes_known_through = trial.steps
        finally:
            tracker.close()
    peak = tracker.peak
    if allocator is not None:
        readings.alive, allocator.events = take_readings(allocator.events)
        # the markers count in no part: a tiny step's peak was the 4,093 B marker before the
        # reference's iteration over what the trial held (+2,805 B, "other", at every size)
        parts = allocator.peaks(labels={**LABELS, BUILT_BYTES: STEPS, OWN_BYTES: STEPS,
                                        MARK_BYTES: STEPS}, first=BUILD)
        peak = max(peak, *(v for part, v in parts.items() if part != BUILD))
        if reference is not None:
            reference.measured = measured_from(allocator, value)
            reference.own_added = allocator.peaks(after_bytes=OWN_BYTES, labels={
                **LABELS, MARK_BYTES: "reference"}, first="own")["own"]
    if device.memory_budget is not None and peak > device.memory_budget:
        raise CPUOutOfMemoryError(
            f"the iteration needs {in_bytes(peak)}, more than the CPU memory budget of "
            f"{in_bytes(device.memory_budget)}", peak)
    return trial, peak, readings


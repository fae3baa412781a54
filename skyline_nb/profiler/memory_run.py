"""Level 3, the memory run: one instrumented iteration that sees every op and every storage.

Four trackers ride along on one warm iteration: the op tracker (which op and module runs; its
times are not used, the timing runs of level 2 are hook-free), the saved-tensor hooks (what
each op saves for backward), the peak tracker (what was alive at the peak, ``peak.py``) and
the FLOP counter (``flops.py``); the last two ride the op tracker's dispatch mode, so each op
pays for one mode, not three (``op_mode.py``).
Saved-tensor hooks change which ops autograd dispatches (no detach of saved outputs), so level
2's timing runs are separate, and per-op results are matched to them by op key (``by_op_of``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from skyline_nb.categories import Categories, Category
from skyline_nb.export.units import format_bytes
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.errors import ProviderError
from skyline_nb.profiler.flops import FlopTracker
from skyline_nb.profiler.memory import (
    SavedTensorTracker,
    named_tensors,
    storage_keys,
    unique_parameters,
)
from skyline_nb.profiler.operations import OperationTracker
from skyline_nb.profiler.peak import PeakSnapshot, PeakTracker
from skyline_nb.profiler.providers import Inputs, Trial
from skyline_nb.profiler.step_peak import MeasuredStep, measured_step

T = TypeVar("T")  # what ``by_op_of`` re-keys


@dataclass
class MemoryRun:
    """What the memory run saw: its ops, the saved tensors, the peak and the iteration's value."""

    ops: OperationTracker
    saved: SavedTensorTracker
    peak: PeakSnapshot
    flops: FlopTracker
    value: Any
    timeline: list[tuple[str, int | None, int]]  # (phase, op index, tracked bytes) per op
    step: MeasuredStep  # what the iteration allocated under the trackers (its value left out)


def memory_run(trial: Trial, dev: Device, warm_inputs: Inputs,
               warnings: list[str]) -> MemoryRun:
    """One iteration of the warm ``trial`` on its ``warm_inputs`` under the four trackers, and
    under the allocator's reports (``step_peak.measured_step``): the allocator's bytes at the
    peak beyond the tracked ones are the kernels' own workspace.

    ``torch.func``'s transforms (``grad``, ``vjp``, ``jacrev``: per-sample gradients, MAML)
    raise inside any saved-tensor hooks; such an iteration runs again without them, and the
    activations it saves for backward are then not attributed to ops (``warnings`` says so)."""
    try:
        return _memory_run(trial, dev, warm_inputs, saved_hooks=True)
    except ProviderError as exc:
        if SAVED_HOOKS_REFUSED not in str(exc.__cause__ or exc):
            raise
    warnings.append(
        "the iteration uses torch.func transforms, which refuse saved-tensor hooks: activations "
        "are not attributed to the ops that saved them (what was alive at the peak still is)")
    return _memory_run(trial, dev, warm_inputs, saved_hooks=False)


# torch.func's error when an iteration transformed by grad/vjp runs inside saved-tensor hooks
SAVED_HOOKS_REFUSED = "support saved tensor hooks"


def _memory_run(trial: Trial, dev: Device, warm_inputs: Inputs,
                saved_hooks: bool) -> MemoryRun:
    model = trial.model
    fixed = storage_keys(p for _, p in unique_parameters(model)) | storage_keys(model.buffers())
    fixed |= storage_keys(trial.input_tensors)
    ops = OperationTracker(model, dev, None)  # its ops' lines are the timing run's
    saved = SavedTensorTracker(fixed, ops.current_op, ops.op_of_node)

    def where() -> tuple[int, str, str] | None:
        index = ops.op_now()
        if index is None:
            return None
        record = ops.records[index]
        return index, record.module, record.name

    def charged() -> tuple[int, str, str] | None:
        """Where an op's FLOPs count: with its time (``OperationTracker.charged``; ``record``
        runs before the riders). Not ``where``, which names the forward op an activation belongs
        to and has none for a double backward's nodes (a gradient penalty) or for the forward an
        optimizer runs (L-BFGS's closure): their FLOPs were unplaced, drawn on the "untracked"
        node, which holds the time no op holds (a WGAN-GP's 25.7 M FLOPs at 41 GFLOP/s)."""
        record = ops.charged
        return None if record is None else (record.index, record.module, record.name)

    tracker = PeakTracker(dev.torch_device, named_tensors(model, warm_inputs[2], []), where)
    flops = FlopTracker(charged)
    ops.riders = (tracker, flops)  # one dispatch mode for the three (op_mode.py)
    try:
        step = measured_step(trial, dev, warm_inputs,
                             _together(ops, saved if saved_hooks else None, tracker))
        peak = tracker.categorized(step.added, model, trial.input_tensors)
    finally:
        tracker.close()
    ops.finish()
    return MemoryRun(ops, saved, peak, flops, step.value, tracker.timeline,
                     step._replace(value=None))


# "other" below this share of the peak is rounding between two measurements of one iteration
OTHER_ROUNDING = 0.005


def at_plain_peak(peak_bytes: int, measured: dict[str, int]) -> Categories:
    """The memory run's categories at the plain iteration's peak, ``peak_bytes``.

    Its allocator sees a few bytes more at its peak than the plain iteration's (under a Python
    dispatch mode an op's Python scalar is a tensor while the op runs: 8 B in an MLP's update),
    and those bytes are in the kernels' workspace, which that allocator reading measured: "other"
    read −8 B, a negative chip beside nearly every CPU breakdown. Within rounding they come off
    the workspace; more than that is ``instrumented_excess``, said in words."""
    categories = Categories.at_peak(peak_bytes, measured)
    excess = -categories[Category.UNTRACKED]
    workspace = measured.get(Category.KERNEL_WORKSPACE, 0)
    if 0 < excess <= min(OTHER_ROUNDING * peak_bytes, workspace):
        return Categories.at_peak(peak_bytes,
                                  {**measured, Category.KERNEL_WORKSPACE: workspace - excess})
    return categories


def instrumented_excess(categories: Categories, peak_bytes: int,
                        kept_per_step: int = 0) -> str | None:
    """Why "other" is negative, when it is beyond rounding: the categories come from the memory
    run, whose iteration is not the plain one. A step whose work is random (a stochastic depth:
    −673 KiB), or a Python dispatch mode (any: a no-op one does it too) making some ops allocate
    differently: a GRU over a packed sequence copies its weights at every time step under a
    mode (+72 blocks of 554 KiB; its peak 542 KB, 8 %, above the plain iteration's); sparse
    gradients 20–42 KB. Or a step that keeps more at every iteration (``kept_per_step``): the
    memory run comes after level 1's iterations (L-BFGS filling its history of 100: 86 KiB an
    iteration, "other" −777 KiB, more than twice the peak, when it came after the timing; −264
    KiB as the iteration right after level 1's window on a CPU, session 39)."""
    other = categories[Category.UNTRACKED]
    if other >= -OTHER_ROUNDING * peak_bytes:
        return None
    if kept_per_step > 0:
        return (f"at its peak the instrumented iteration held {format_bytes(-other)} more than "
                f"the plain one: your step keeps {format_bytes(kept_per_step)} more alive at "
                "every iteration, and the instrumented one ran after the ones its peak was read "
                "from; the memory categories describe it, so \"other\" is negative by that much")
    return (f"at its peak the instrumented iteration held {format_bytes(-other)} more than the "
            "plain one: its work differs from step to step (e.g. a random depth), or PyTorch "
            "runs some ops differently under the profiler's dispatch mode (e.g. an RNN over a "
            "packed sequence copies its weights at every step); the memory categories describe "
            "the instrumented iteration, so \"other\" is negative by that much")


@contextmanager
def _together(ops: OperationTracker, saved: SavedTensorTracker | None,
              tracker: PeakTracker) -> Iterator[None]:
    with ops, saved.active() if saved is not None else nullcontext(), tracker.riding():
        yield


def by_op_of(
    per_op: dict[int | None, T], source: OperationTracker, target: OperationTracker,
    merge: Callable[[T, T], T] = operator.add,
) -> dict[int | None, T]:
    """Re-key bytes (or FLOPs, or ``merge``d values such as saved spans) from the memory run's
    op indices to the timing run's ops (by module and op key). An op the timing run lacks goes
    to its last op of that name in that module: a step whose forward runs a varying number of
    times (L-BFGS's closure, called again by its line search) ran more in one run than in the
    other, and those FLOPs went to None, the untracked node, which does no op's work
    ("impossible", ``report_checks``); else to None."""
    index_of = {(r.module, r.key): r.index for r in target.records}
    last_of = {(r.module, r.name): r.index for r in target.records}
    result: dict[int | None, T] = {}
    for index, value in per_op.items():
        record = source.records[index] if index is not None else None
        target_index = None if record is None else index_of.get(
            (record.module, record.key), last_of.get((record.module, record.name)))
        result[target_index] = (merge(result[target_index], value) if target_index in result
                                else value)
    return result



TIMELINE_POINTS = 256


def memory_timeline(run: MemoryRun, points: int = TIMELINE_POINTS) -> list[list[Any]]:
    """The tracked bytes over the memory run as at most ``points`` [phase, op path, bytes]
    entries in order: the op sequence cut into equal runs, each kept as its highest point (so
    the peak is always among them). Op paths are as the tree names its op leaves."""
    timeline = run.timeline
    size = max(1, -(-len(timeline) // points))
    kept = []
    for start in range(0, len(timeline), size):
        phase, index, live = max(timeline[start:start + size], key=lambda entry: entry[2])
        kept.append([phase, "" if index is None else run.ops.records[index].path, live])
    return kept

"""``profile()``: the leveled measurement of one training iteration, isolated from the user.

Order of work (XSP's leveled approach: instrumentation never runs inside a timed iteration):
  1. iteration level, uninstrumented: iteration time, throughput, peak memory on one fresh
     trial (``iteration.py``), which is then kept warm for the other levels;
  2+3. one memory run and then instrumented runs: every op timed in situ with module paths and
     source lines (``operations.py``), the storages saved for backward, weights, grads and
     optimizer state (``memory.py``); the op times reconciled with the headline (``level2.py``);
  then, optionally, level 1 at other batch sizes (``sample_plan.py`` chooses them as they are
     measured) for the performance curves: last, so that a GPU's samples are budgeted on the
     profile's measured cost, not a forecast of it (``samples.sampling_budget_ms``).
Untracked time/memory = level 1 minus what level 2/3 accounted for, reported as is (negative
values are kept and explained in ``warnings``; op times beyond the headline are scaled to it,
with a warning). Isolation: ``isolation.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import torch

from skyline_nb.categories import OPTIMIZER_PATH, Category
from skyline_nb.export.units import format_ms
from skyline_nb.profiler.compiled import compiled_graphs, compiled_warning, scripted_warning
from skyline_nb.profiler.cpus import oversubscribed_note, usable_cpus
from skyline_nb.profiler.device import CPUOutOfMemoryError, Device
from skyline_nb.profiler.errors import StartingBatchOOMError, in_bytes
from skyline_nb.profiler.held import held_warning
from skyline_nb.profiler.isolation import isolated
from skyline_nb.profiler.iteration import (
    IterationResult,
    WarmTrial,
    measure_level1,
)
from skyline_nb.profiler.level2 import NOTED_EXCESS, UNTRACKED_TOLERANCE, reconciled_op_times
from skyline_nb.profiler.memory import (
    ParameterOrigins,
    merged_span,
    tensor_bytes,
    unique_parameters,
)
from skyline_nb.profiler.memory_run import (
    MemoryRun,
    at_plain_peak,
    by_op_of,
    instrumented_excess,
    memory_run,
    memory_timeline,
)
from skyline_nb.profiler.peak import OPTIMIZER, PeakSnapshot
from skyline_nb.profiler.prepare import prepare
from skyline_nb.profiler.prints import held_prints
from skyline_nb.profiler.progress import Progress, Reporter, covers
from skyline_nb.profiler.providers import InputsAtAnySize, build_trial
from skyline_nb.profiler.range_ends import fitted_within_ends
from skyline_nb.profiler.retained import kept_warning
from skyline_nb.profiler.roofline import known, roofline
from skyline_nb.profiler.roofline import measure as measure_roofline
from skyline_nb.profiler.samples import sample_sizes, untracked_peaks
from skyline_nb.profiler.stacks import CellLookup, UserCode
from skyline_nb.profiler.step_peak import varying_warning
from skyline_nb.profiler.threads import (
    ITERATIONS,
    faster,
    one_thread_ms,
    one_thread_note,
    one_thread_notice,
)
from skyline_nb.profiler.timing import HEADLINE, Timing
from skyline_nb.profiler.tree import TreeInputs, build_tree
from skyline_nb.report import OneThread, PeakPlace, Report, WeightEntry


def profile(
    model_provider: Callable[[], Any],
    input_provider: Callable[..., Any],
    iteration_provider: Callable[[Any], Callable[..., Any]],
    *,
    batch_size: int | None = None,
    device: Any = None,
    predict: bool = True,
    project_root: str | Path | None = None,
    memory_budget: int | None = None,
    cells: CellLookup | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Report:
    """Profile one training iteration of the model the providers describe.

    ``batch_size=None`` uses the input provider's default; ``device=None`` means CUDA when
    available, else CPU; ``memory_budget`` (bytes) caps the capacity used for predictions and,
    on CPU, makes an iteration needing more fail like an out-of-memory. ``project_root`` decides
    which files count as the user's code (default: the folder of the model provider's file, or
    of the input provider's where the model provider is a class; the working folder for
    notebook cells); ``cells`` tells which code files are notebook cells (the
    notebook side passes ``cells.lookup``; None: there are none); ``progress`` is called as
    each stage starts (``progress.py``).
    """
    run = prepare(model_provider, input_provider, iteration_provider, batch_size=batch_size,
                  device=device, project_root=project_root, memory_budget=memory_budget,
                  cells=cells)
    dev, user_code, providers, size = run.device, run.user_code, run.providers, run.batch_size
    reporter = Reporter(progress, predict)
    crowded = oversubscribed_note(torch.get_num_threads(), usable_cpus()) if (
        dev.kind == "cpu") else None
    reporter.notice = crowded  # while it runs too: such a profile can take minutes
    warnings: list[str] = []
    origins = ParameterOrigins(user_code.capture)

    def build() -> Any:
        with origins:  # where each parameter was created, for the weights' source lines
            return build_trial(providers, size, dev)

    with isolated(dev), held_prints() as prints:
        graphs = compiled_graphs()
        if not known(dev):  # 0.25 s, once per kernel (again while busy): not a sample budget
            reporter.stage("measuring this machine's peak FLOP/s and memory bandwidth", 0)
            with reporter.uncounted():
                measure_roofline(dev)
        runs: list[MemoryRun] = []
        noted: list[str] = []  # the memory run's warnings, said after level 1's as before

        def measure_memory(warm: WarmTrial) -> None:
            runs.append(memory_run(warm.trial, dev, warm.user_inputs, noted))
            warm.tracked = runs[0].step

        def before_timing(warm: WarmTrial) -> None:
            try:
                measure_memory(warm)
            except dev.oom_types as exc:  # the user's batch ran: not "does not fit"
                raise _Carried(exc) from exc

        # CPU: the memory run right after the warm-up's window, which saves it an iteration
        # of the user's (``step_peak.measured_step``); CUDA as proven on a GPU, after the timing
        early = dev.kind == "cpu"
        try:
            # the op timing after it is not drawn (``Progress.timed``): this stage names it
            reporter.stage("building the model, measuring its memory, then timing the "
                           "iteration and each op" if early else
                           "building the model and timing an iteration", 9 if early else 7)
            level1, warm = measure_level1(build, dev, size, precision=HEADLINE,
                                          inputs_for=InputsAtAnySize(providers, size, dev),
                                          before_timing=before_timing if early else None)
        except dev.oom_types as exc:
            raise _not_fitting(dev, size, exc) from exc
        except _Carried as carried:
            raise carried.error from None
        try:
            reporter.iteration_ms = level1.iteration_ms
            warnings.extend(filter(None, [compiled_warning(warm.trial.model, graphs),
                                           scripted_warning(warm.trial.model)]))
            # at one thread as busy a moment as the headline's, before anything else
            unsettled = _unsettled(level1, warm, dev, reporter) if level1.waited else None
            if unsettled is not None:  # a measured speed-up is the note to read first
                warnings.insert(0 if unsettled.leads else len(warnings), unsettled.note)
            if not runs:
                reporter.stage("measuring memory at the peak and what each op saves, then "
                               "timing each op", 2, timed=not covers(2 * level1.iteration_ms))
                measure_memory(warm)
            warnings.extend(noted)
            report = _instrumented(warm, runs[0], origins, dev, user_code, level1, warnings,
                                   reporter)
            report.one_thread = None if unsettled is None else unsettled.one_thread
            report.samples = [level1.sample()]
            # last: on a GPU their budget is the cost bar over the profile measured so far
            sampled = sample_sizes(warm, dev, warnings, reporter) if predict else None
            if sampled is not None:
                untracked_peaks(warm, sampled, reporter)
                report.samples, report.models = fitted_within_ends(
                    warm, level1, sampled, dev, report.categories, warnings)
        finally:
            del warm
    warnings.extend(filter(None, [prints.warning()]))
    warnings[:0] = [crowded] if crowded else []  # the cause of a slow step: said first
    warnings[:] = dict.fromkeys(warnings)  # each once: every op timing run may add its own
    reporter.finish()
    return report


class _Carried(Exception):
    """An out-of-memory error of the memory run, carried past level 1's handler, which reads
    one as the user's batch not fitting; raised as it was (it was before the memory run moved
    into level 1 on a CPU)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _not_fitting(dev: Device, size: int, exc: BaseException) -> StartingBatchOOMError:
    """The user's batch does not fit: where (the device's memory, or the CPU budget the user
    gave, whose own error says no more than that), and what to try."""
    if isinstance(exc, CPUOutOfMemoryError) and dev.memory_budget is not None:
        needs = "" if exc.needed is None else (
            f" (it needs {'more than ' if exc.stopped else ''}{in_bytes(exc.needed)}"
            f"{': it was stopped there' if exc.stopped else ''})")
        smaller = "a smaller batch size or " if size > 1 else ""
        return StartingBatchOOMError(
            f"one iteration at batch size {size} does not fit in the cpu memory budget of "
            f"{in_bytes(dev.capacity_bytes())}{needs}; try {smaller}a larger memory budget")
    return StartingBatchOOMError(
        f"one iteration at batch size {size} does not fit in the {dev.kind} memory "
        f"({in_bytes(dev.capacity_bytes())} free for this kernel when the profile began): {exc}; "
        "try a smaller batch size")


# Timed steps further apart than this factor: the headline, their median, is one draw of a time
# the busy machine keeps moving, and the note gives their range. Beside one spinning process at
# 2 threads, the example CNN's headline steps took 48–174, 58–221 and 42–194 ms in three
# profiles in a row, whose headlines read 100, 103 and 55 ms (BENCHMARKS.md, session 55).
VARIED = 1.5


def waited_steps(timing: Timing) -> str:
    """How many of the headline's steps waited for a CPU, and how far apart they lay where
    that is more than ``VARIED``×."""
    waits = f"{timing.waited_count} of {len(timing.ms)} timed steps waited for a busy CPU"
    low, high = min(timing.ms), max(timing.ms)
    if high > VARIED * low:
        waits += f" and took {format_ms(low)} to {format_ms(high)}"
    return waits


class Unsettled(NamedTuple):
    """``_unsettled``'s note, whether it leads the others, and the time at one thread."""

    note: str
    leads: bool
    one_thread: OneThread | None


def _unsettled(level1: IterationResult, warm: WarmTrial, dev: Device,
               reporter: Reporter) -> Unsettled:
    """The machine stayed busy while the headline was timed: say so, and on CPU with several
    torch threads, what one thread does to the same step (``threads.py``: beside one busy
    process a kernel's two threads on two cores can run 13× slower than one). Returns the note,
    whether it leads the others (one thread measured faster) and the time at one thread (None:
    not timed)."""
    waits = waited_steps(level1.timing)
    text = f"{waits}: the step time may be higher than on a quiet machine"
    threads = torch.get_num_threads()
    if dev.kind != "cpu" or threads < 2:
        return Unsettled(text, False, None)
    reporter.stage("timing the step at one torch thread, to compare", ITERATIONS + 1)
    one_ms = one_thread_ms(warm.trial.step, dev, level1.iteration_ms)
    leads = faster(one_ms, level1.iteration_ms)
    if leads and reporter.notice is None:  # said at once: the rest may take minutes at this pace
        # (a process with more threads than CPUs keeps its first notice: it names the cause and
        # the count to set, where this one would say 1 beside it)
        reporter.notice = one_thread_notice(threads, level1.iteration_ms, one_ms)
    note = one_thread_note(threads, level1.iteration_ms, one_ms)
    return Unsettled(f"{note}; {waits}" if leads else f"{text}; {note}", leads,
                     OneThread(threads, one_ms))


def _instrumented(
    warm: WarmTrial,
    run: MemoryRun,
    origins: ParameterOrigins,
    dev: Device,
    user_code: UserCode,
    level1: IterationResult,
    warnings: list[str],
    reporter: Reporter,
) -> Report:
    """Level 2 on the warm trial, assembled with level 1 and the memory ``run`` into the
    Report."""
    size = level1.batch_size
    trial = warm.trial
    model = trial.model
    params = unique_parameters(model)
    memory_ops, value = run.ops, run.value
    ops, scaled = reconciled_op_times(level1, trial, dev, user_code, memory_ops.wall_ms,
                                      warnings, reporter)
    activation_by_op = by_op_of(run.saved.bytes_per_op(), memory_ops, ops)
    weights, weight_bytes, grad_bytes = [], {}, {}
    for name, param in params:
        size_bytes = tensor_bytes(param)
        if param.grad is not None:
            grad = tensor_bytes(param.grad)
        else:
            grad = size_bytes if name in memory_ops.accumulated else 0
        frames = origins.frames.get(id(param), [])
        weights.append(WeightEntry(name, size_bytes, grad, frames))
        weight_bytes[name], grad_bytes[name] = size_bytes, grad
    optimizers = memory_ops.live_optimizers()
    categories = at_plain_peak(level1.peak_bytes, run.peak.by_category)
    varies = varying_warning(level1.batch_size, level1.batch_peaks)
    warnings.extend(filter(None, [instrumented_excess(categories, level1.peak_bytes,
                                                      level1.kept_per_step),
                                  held_warning(trial, categories),
                                  kept_warning(level1.kept_per_step, level1.peak_bytes,
                                               level1.kept_by, varies is not None),
                                  varies]))
    ops_ms = ops.ops_ms()
    untracked_ms = level1.iteration_ms - ops_ms
    if untracked_ms < -NOTED_EXCESS * level1.iteration_ms and not scaled:
        warnings.append(
            f"op times add up to {format_ms(ops_ms)}, a little more than the whole step "
            f"({format_ms(level1.iteration_ms)}): timing overhead; the shares are still right"
        )
    elif (untracked_ms > UNTRACKED_TOLERANCE * level1.iteration_ms
          and level1.timing.busy):
        warnings.append(
            f"the machine was busy: much of the {format_ms(untracked_ms)} not matched to an op "
            "is waiting for a CPU"
        )
    if not memory_ops.accumulated and all(r.backward_ms is None for r in ops.records):
        warnings.append(
            f"no backward pass ran (the iteration {trial.where}): this is a forward step, not "
            "training; call loss.backward() in it to profile training"
        )
    warnings.extend(_finite_checks(value, params, trial.where))
    tree = build_tree(
        TreeInputs(
            model=model,
            ops=ops,
            activation_by_op=activation_by_op,
            saved_span_by_op=by_op_of(run.saved.spans_per_op(), memory_ops, ops, merged_span),
            peak_activation_by_op=by_op_of(run.peak.by_op, memory_ops, ops),
            module_added=run.peak.module_added,
            flops=(by_op_of({**run.flops.forward, None: run.flops.unplaced}, memory_ops, ops),
                   by_op_of(dict(run.flops.backward), memory_ops, ops)),
            flop_bytes_moved=by_op_of(run.flops.moved, memory_ops, ops),
            weight_bytes=weight_bytes,
            grad_bytes=grad_bytes,
            peak_grad_bytes=run.peak.grads_by_param,
            param_frames={w.name: w.frames for w in weights},
            untracked_ms=untracked_ms,
            optimizer_name=", ".join(sorted({type(o).__name__ for o in optimizers})),
        )
    )
    # the root holds the gradients category whole: bytes of a gradient no parameter held at the
    # end (one replaced during the step) are the model's own
    tree.peak_grad_bytes = categories.get(Category.GRADS, 0)
    files = {f.file for node in tree.walk() for f in node.frames}
    files |= {f.file for w in weights for f in w.frames}
    device = dev.info()
    roof = roofline(dev, [(n.forward_flops + n.backward_flops, n.total_ms) for n in tree.walk()])
    device.peak_flops, device.bandwidth = roof.peak_flops, roof.bandwidth
    return Report(
        batch_size=size,
        iteration_ms=level1.iteration_ms,
        throughput=level1.throughput,
        peak_bytes=level1.peak_bytes,
        device=device,
        tree=tree,
        weights=weights,
        categories=categories,
        peak_place=_peak_place(run.peak),
        total_flops=run.flops.total,
        memory_timeline=memory_timeline(run),
        sources=user_code.sources(files),
        instrumented_ms=ops.wall_ms,
        untracked_ms=untracked_ms,
        warnings=warnings,
        torch_version=torch.__version__,
    )


def _peak_place(peak: PeakSnapshot) -> PeakPlace:
    if peak.phase == OPTIMIZER:
        return PeakPlace(peak.phase, OPTIMIZER_PATH)
    module, op = peak.place if peak.place is not None else (None, None)
    return PeakPlace(peak.phase, module, op)


def _finite_checks(value: Any, params: list[tuple[str, Any]], where: str) -> list[str]:
    """Warnings for a NaN/inf loss (the iteration's return value) or parameters gone non-finite."""
    found = []
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        if not bool(torch.isfinite(value.detach()).all()):
            found.append(f"the iteration {where} returned a NaN/inf loss")
    elif isinstance(value, float) and not math.isfinite(value):
        found.append(f"the iteration {where} returned a NaN/inf loss")
    with torch.no_grad():
        bad = [n for n, p in params if p.is_floating_point() and not bool(torch.isfinite(p).all())]
    if bad:
        found.append(
            f"after one step {len(bad)} parameter(s) hold NaN/inf (first: {bad[0]}): timings "
            "may not be typical"
        )
    return found


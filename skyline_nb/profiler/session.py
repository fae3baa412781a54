"""``profile()``: the leveled measurement of one training iteration, isolated from the user.

Order of work, each level with its own fresh model so instrumentation never pollutes the
headline numbers (XSP's leveled approach):
  1. iteration level, uninstrumented: iteration time, throughput, peak memory (``iteration.py``);
  2+3. one instrumented iteration after two plain warm-ups: every op timed in situ with module
     paths and source lines (``operations.py``) and the storages saved for backward, weights,
     grads and optimizer state (``memory.py``);
  4. optionally more level-1 samples at other batch sizes for the performance models.
Untracked time/memory = level 1 minus what level 2/3 accounted for, reported as is (negative
values are kept and explained in ``warnings``, never clamped).

Isolation (``isolated``): RNG forked (CPU + CUDA, Python ``random``, NumPy), grad mode and global
torch flags restored, hooks and modes removed in ``finally``, memory released, and models always
fresh from the provider (copied when the user holds the returned object), so the user's objects
and session are exactly as before, whether profile() returns or raises (KeyboardInterrupt too).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from skyline_nb.models.linear import PerformanceModels
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.device import Device, resolve_device
from skyline_nb.profiler.errors import ProviderSignatureError, StartingBatchOOMError
from skyline_nb.profiler.iteration import IterationResult, measure_level1
from skyline_nb.profiler.memory import (
    ParameterOrigins,
    SavedTensorTracker,
    optimizer_state_bytes,
    storage_keys,
    tensor_bytes,
    unique_parameters,
)
from skyline_nb.profiler.operations import OperationTracker, merge_median
from skyline_nb.profiler.providers import Providers, build_trial, load_providers
from skyline_nb.profiler.stacks import UserCode, default_project_root
from skyline_nb.profiler.tree import TreeInputs, build_tree
from skyline_nb.report import Report, Sample, WeightEntry

LEVEL2_WARMUP = 2
# Instrumented iterations; each op's time is the median over them. At least 3; tiny models
# (a few ms per run) get more, up to 9 within about LEVEL2_BUDGET_MS: with 3 runs the MLP's
# untracked time at batch 16 spread over -12.1 … +2.8 % across 5 profiles (a load burst can
# cover three 3 ms runs), with 9 over +0.8 … +6.0 %, for ~30 ms more. Always an odd number,
# so the median is one measured value.
LEVEL2_RUNS, LEVEL2_MAX_RUNS, LEVEL2_BUDGET_MS = 3, 9, 150.0


def more_level2_runs(walls_ms: list[float]) -> bool:
    """Whether to take another instrumented run after runs that took ``walls_ms`` each."""
    n = len(walls_ms)
    if n < LEVEL2_RUNS:
        return True
    return n < LEVEL2_MAX_RUNS and (n % 2 == 0 or sum(walls_ms) < LEVEL2_BUDGET_MS)


@contextmanager
def isolated(device: Device) -> Iterator[None]:
    """Run measurements without leaving a trace in the user's session (see module docstring)."""
    flags = tp.backend_flags()
    saved = {name: get() for name, (get, _set) in flags.items()}
    python_rng = random.getstate()
    numpy_rng = _numpy_state()
    cuda = [device.torch_device.index] if device.kind == "cuda" else []
    try:
        with torch.random.fork_rng(devices=cuda):
            torch.set_grad_enabled(True)
            yield
    finally:
        for name, (get, set_) in flags.items():
            if get() != saved[name]:
                set_(saved[name])
        random.setstate(python_rng)
        if numpy_rng is not None:
            import numpy

            numpy.random.set_state(numpy_rng)
        device.free_memory()


def _numpy_state() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy.random.get_state()


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
) -> Report:
    """Profile one training iteration of the model the providers describe.

    ``batch_size=None`` uses the input provider's default; ``device=None`` means CUDA when
    available, else CPU; ``memory_budget`` (bytes) caps the capacity used for predictions and,
    on CPU, makes an iteration needing more fail like an out-of-memory. ``project_root`` decides
    which files count as the user's code (default: the model provider's folder, or the working
    folder for notebook cells).
    """
    dev = resolve_device(device, memory_budget)
    root = Path(project_root) if project_root is not None else default_project_root(model_provider)
    user_code = UserCode(root)
    providers = load_providers(model_provider, input_provider, iteration_provider, user_code)
    size = batch_size if batch_size is not None else providers.default_batch_size
    if size is None:
        raise ProviderSignatureError(
            f"no batch size: pass batch_size= or give `batch_size` a default in "
            f"{providers.where(input_provider)}"
        )
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"batch_size must be a positive integer, not {size!r}")
    warnings: list[str] = []
    with isolated(dev):
        try:
            level1 = measure_level1(lambda: build_trial(providers, size, dev), dev, size)
        except dev.oom_types as exc:
            raise StartingBatchOOMError(
                f"one iteration at batch size {size} does not fit in the {dev.kind} memory "
                f"({dev.capacity_bytes()} bytes): {exc}; try a smaller batch size"
            ) from exc
        if not level1.converged:
            waited = (
                f", {level1.waited_blocks} of which waited for a CPU (other processes were "
                "running); the median of the blocks that waited least is reported"
                if level1.waited_blocks
                else " (a busy machine?); the median block is reported"
            )
            warnings.append(
                f"iteration time did not settle within 5 % over {len(level1.block_means)} "
                f"blocks{waited}"
            )
        report = _instrumented(providers, size, dev, user_code, level1, warnings)
        first = level1.sample()
        report.samples = [first]
        if predict:
            report.samples, report.models = _predict(providers, dev, first, warnings)
    return report


def _instrumented(
    providers: Providers,
    size: int,
    dev: Device,
    user_code: UserCode,
    level1: IterationResult,
    warnings: list[str],
) -> Report:
    """Levels 2 and 3 on a fresh model, assembled with level 1 into the Report."""
    origins = ParameterOrigins(user_code.capture)
    with origins:
        trial = build_trial(providers, size, dev)
    for _ in range(LEVEL2_WARMUP):
        trial.step()
    model = trial.model
    params = unique_parameters(model)
    fixed = storage_keys([p for _, p in params]) | storage_keys(model.buffers())
    fixed |= storage_keys(trial.input_tensors)
    # Memory run first: saved-tensor hooks change which ops autograd dispatches (no detach of
    # saved outputs), so time is taken from separate hook-free runs, matched by op key.
    memory_ops = OperationTracker(model, dev, user_code)
    saved = SavedTensorTracker(fixed, memory_ops.current_op, memory_ops.op_of_node)
    with memory_ops, saved.active():
        value = trial.step()
    memory_ops.finish()
    runs: list[OperationTracker] = []
    while more_level2_runs([r.wall_ms for r in runs]):
        # Held longer than the host needs to launch the instrumented iteration (hold_queue).
        hold = 2.0 * memory_ops.wall_ms + 5.0 if dev.kind == "cuda" else 0.0
        run = OperationTracker(model, dev, user_code, hold_ms=hold)
        with run:
            trial.step()
        run.finish()
        runs.append(run)
    ops = runs[0]
    if not merge_median(ops, runs[1:]):
        warnings.append("the instrumented iterations ran different ops; op times are from one run")
    activation_by_op = _match_activations(saved.bytes_per_op(), memory_ops, ops)
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
    categories = {
        "weights": sum(weight_bytes.values()),
        "grads": sum(grad_bytes.values()),
        "optimizer": optimizer_state_bytes(optimizers, storage_keys(p for _, p in params)),
        "activations": saved.total_bytes(),
    }
    categories["untracked"] = level1.peak_bytes - sum(categories.values())
    ops_ms = ops.ops_ms()
    untracked_ms = level1.iteration_ms - ops_ms
    if untracked_ms < 0:
        warnings.append(
            f"the ops measured one by one sum to {ops_ms:.3f} ms, more than the uninstrumented "
            f"iteration ({level1.iteration_ms:.3f} ms); untracked time is negative (timing noise, "
            "the ~2 µs Python dispatch cost each timed op carries, or worker threads woken "
            "after instrumentation gaps; torch.set_num_threads(1) makes it steadier)"
        )
    warnings.extend(_finite_checks(value, params, trial.where))
    tree = build_tree(
        TreeInputs(
            model=model,
            ops=ops,
            activation_by_op=activation_by_op,
            weight_bytes=weight_bytes,
            grad_bytes=grad_bytes,
            param_frames={w.name: w.frames for w in weights},
            untracked_ms=untracked_ms,
            optimizer_name=", ".join(sorted({type(o).__name__ for o in optimizers})),
        )
    )
    files = {f.file for node in tree.walk() for f in node.frames}
    files |= {f.file for w in weights for f in w.frames}
    return Report(
        batch_size=size,
        iteration_ms=level1.iteration_ms,
        throughput=level1.throughput,
        peak_bytes=level1.peak_bytes,
        device=dev.info(),
        tree=tree,
        weights=weights,
        categories=categories,
        sources=user_code.sources(files),
        instrumented_ms=ops.wall_ms,
        untracked_ms=untracked_ms,
        warnings=warnings,
        torch_version=torch.__version__,
    )


def _match_activations(
    per_op: dict[int | None, int], source: OperationTracker, target: OperationTracker
) -> dict[int | None, int]:
    """Re-key activation bytes from the memory run's op indices to the timing run's ops."""
    index_of = {(r.module, r.key): r.index for r in target.records}
    result: dict[int | None, int] = {}
    for index, nbytes in per_op.items():
        record = source.records[index] if index is not None else None
        target_index = index_of.get((record.module, record.key)) if record else None
        result[target_index] = result.get(target_index, 0) + nbytes
    return result


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
            f"after one iteration {len(bad)} parameter(s) hold NaN/inf (first: {bad[0]}); "
            "the loss is probably NaN/inf, so the timings may not be representative"
        )
    return found


def _predict(
    providers: Providers, dev: Device, first: Sample, warnings: list[str]
) -> tuple[list[Sample], PerformanceModels]:
    """More level-1 samples at other batch sizes, and the fitted lines."""
    from skyline_nb.profiler.sampling import collect_samples

    busy: list[int] = []  # batch sizes whose timing never found a quiet stretch

    def measure(batch: int) -> Sample:
        result = measure_level1(lambda: build_trial(providers, batch, dev), dev, batch)
        if not result.converged and result.waited_blocks:
            busy.append(batch)
        return result.sample()

    capacity = dev.capacity_bytes()
    samples, reason = collect_samples(measure, first, capacity, oom_errors=dev.oom_types)
    if busy:
        warnings.append(
            f"the samples at batch size {', '.join(map(str, busy))} were timed while other "
            "processes kept the CPU busy (their blocks waited for a CPU), so the time "
            "predictions may be off; re-profile when the machine is quieter"
        )
    models = PerformanceModels.from_samples(
        [s.batch_size for s in samples],
        [s.iteration_ms for s in samples],
        [s.peak_bytes for s in samples],
        capacity,
        reason,
    )
    return samples, models

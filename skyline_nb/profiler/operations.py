"""Level 2, operations: every aten op of forward, backward and optimizer, timed where it ran.

A public context manager (``OperationTracker``) owns a ``TorchDispatchMode`` (``op_mode.py``,
which other trackers may ride), global module forward pre/post hooks and global optimizer step
hooks, and removes all of them on exit, whatever happened inside. Ops are timed in situ (host
clock on CPU; CUDA event pairs read after one synchronize), never re-run in isolation:
re-running is wrong for in-place ops, RNG and overlap (Skyline did it).

Linking backward to forward: autograd gives each forward op's grad_fn a sequence number, and the
node running a backward op has the same number. Inside the dispatch mode an op's outputs do not
have their grad_fn yet (autograd attaches it after the op returns), so outputs are resolved
lazily, at the next dispatch. AccumulateGrad nodes are linked to their parameter instead.

Module paths come from global forward hooks, one record per module INSTANCE: ``blocks.0`` and
``blocks.1`` stay separate even though the loop body is the same line (Skyline merged them).

A module entered while an autograd node runs is activation checkpointing's re-run of it: its
ops are charged, as backward time, to the forward records they repeat (``reruns.py``), and the
nodes they create link there.

Known limitations: ops run by C++ extensions that bypass the dispatcher are invisible; backward
nodes created outside the tracked iteration (a retained graph) cannot be linked and are kept
as root-level "unlinked" entries. On CUDA an op's event pair also spans its launch: when the
model is launch-bound (small kernels, the GPU idles between them), the instrumented launch path
is slower than the plain one, so Σ op times exceeds the iteration and untracked goes negative
(BENCHMARKS.md, H100); GPU-bound models do not have this.

On CPU each window still carries what a call from Python costs below the dispatch mode (schema
argument parsing, wrapping the outputs): ~2 µs per op that the plain iteration, whose backward
and optimizer kernels are called from C++, never spends. That biases Σ op time up by
n_ops × ~2 µs (about 1–4 % for the examples; most visible in Adam's ~250 tiny ops). With more
than one intra-op thread, OpenMP workers that fall asleep in the instrumentation gaps between
ops are woken inside the next op's window (dramatic when cores are oversubscribed). Numbers:
BENCHMARKS.md ("Profiler").
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from skyline_nb.categories import OPTIMIZER_PATH
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.compiled import class_name, quiet_compiled_module_warning
from skyline_nb.profiler.device import Device, Timer
from skyline_nb.profiler.leaves import tensors_in
from skyline_nb.profiler.memory import unique_parameters, user_path
from skyline_nb.profiler.op_mode import OpMode, OpRider
from skyline_nb.profiler.optimizer_steps import OptimizerSteps, gradient_hooks
from skyline_nb.profiler.reruns import Reruns
from skyline_nb.profiler.stacks import UserCode
from skyline_nb.report import Frame

FORWARD, OPTIMIZER, BACKWARD = "forward", "optimizer", "backward"


@dataclass
class OpRecord:
    """One op instance (forward or optimizer), or an aggregate of unlinked backward work."""

    index: int
    name: str
    module: str
    phase: str
    frames: list[Frame] = field(default_factory=list)
    forward_ms: float = 0.0
    backward_ms: float | None = None
    parameter: str | None = None  # AccumulateGrad entries: the parameter's name
    key: str = ""  # "<name>#<k>": the k-th record of this name in this module instance

    @property
    def path(self) -> str:
        """The op's node path in the report's tree: "<module path>/<key>" ("[optimizer]/..."
        for the optimizer's ops, the key alone outside every module)."""
        prefix = OPTIMIZER_PATH if self.phase == OPTIMIZER else self.module
        return f"{prefix}/{self.key}" if prefix else self.key


class OperationTracker:
    """Context manager: everything torch runs inside it becomes ``OpRecord``s.

    Example usage::

        with OperationTracker(model, device, user_code) as ops:
            iteration(*inputs)
        ops.finish()       # one synchronize, then read all timers
        ops.records        # forward/optimizer ops in execution order, plus unlinked backward
    """

    def __init__(
        self,
        model: nn.Module,
        device: Device,
        user_code: UserCode | None,
        hold_ms: float = 0.0,
    ) -> None:
        """``user_code`` None: no source lines are read (the memory run's records only key its
        bytes and FLOPs to the timing run's, whose lines the report shows: reading them cost
        ~9 µs an op, half a BERT iteration a profile)."""
        self.device = device
        # other trackers whose per-op work rides this one's mode (set before entering)
        self.riders: tuple[OpRider, ...] = ()
        self.hold_ms = hold_ms  # see Device.hold_queue: queue the iteration behind a spin
        self.user_code = user_code
        self.module_names: dict[int, str] = {
            id(m): user_path(name) for name, m in model.named_modules(remove_duplicate=True)
        }
        named = unique_parameters(model)
        self.param_names: dict[int, str] = {id(p): name for name, p in named}
        self.extra_modules: dict[int, tuple[str, str]] = {}  # id -> (path, class name)
        self.module_frames: dict[str, list[Frame]] = {}
        self.module_order: list[str] = []
        self.records: list[OpRecord] = []
        self.accumulated: set[str] = set()  # parameters that received a gradient
        self.optimizers: list[weakref.ref[Any]] = []
        self.pending: list[tuple[int, weakref.ref[torch.Tensor]]] = []
        self.wall_ms = 0.0
        self._by_seq: dict[int, int] = {}
        self._aggregates: dict[tuple[str, str], OpRecord] = {}
        # CPU: elapsed ns taken inline (host_clock); CUDA: event pairs read after the sync
        self._timers: list[tuple[OpRecord, bool, Timer | int]] = []
        self.host_clock = device.kind == "cpu"
        self._stack: list[str] = []
        self._rerun: list[bool] = []  # per _stack entry: entered inside backward (a re-run)
        self._reruns = Reruns(self.records, FORWARD)
        self._parameters = [p for _, p in named]
        self._steps = OptimizerSteps(self._parameters)
        self._handles: list[Any] = []
        self._mode: OpMode | None = None
        self._last_forward: int | None = None
        # the record the latest op's time went to (the memory run's FLOP counter charges its
        # FLOPs there too, memory_run.py)
        self.charged: OpRecord | None = None
        self._started = 0
        self._timer_factory = device.timer

    # ---- hooks ----------------------------------------------------------------------------
    def _module_path(self, module: nn.Module) -> str:
        name = self.module_names.get(id(module))
        if name is not None:
            return name
        extra = self.extra_modules.get(id(module))
        if extra is None:
            base = class_name(module)
            taken = {p for p, _ in self.extra_modules.values()} | set(self.module_names.values())
            path, k = base, 1
            while path in taken:
                k += 1
                path = f"{base}_{k}"
            extra = (path, base)
            self.extra_modules[id(module)] = extra
        return extra[0]

    def _pre_hook(self, module: nn.Module, args: Any) -> None:
        path = self._module_path(module)
        if path not in self.module_frames:
            self.module_frames[path] = self._capture()
            self.module_order.append(path)
        self._stack.append(path)
        self._rerun.append(tp.current_autograd_node() is not None)

    def _capture(self) -> list[Frame]:
        return [] if self.user_code is None else self.user_code.capture()

    def _post_hook(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._stack:
            self._stack.pop()
            self._rerun.pop()

    def _step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._steps.enter(optimizer)
        if not any(ref() is optimizer for ref in self.optimizers):
            self.optimizers.append(weakref.ref(optimizer))

    def _step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._steps.leave()

    # ---- bookkeeping ----------------------------------------------------------------------
    def new_timer(self) -> Timer:
        return self._timer_factory()

    def resolve_pending(self) -> None:
        """Map grad_fn sequence numbers of earlier forward outputs to their op records."""
        for index, ref in self.pending:
            tensor = ref()
            grad_fn = getattr(tensor, "grad_fn", None) if tensor is not None else None
            if grad_fn is not None:
                self._by_seq.setdefault(tp.sequence_nr(grad_fn), index)
        self.pending.clear()

    def op_of_node(self, node: Any) -> int | None:
        if self.pending:
            self.resolve_pending()
        return self._by_seq.get(tp.sequence_nr(node))

    def current_op(self) -> int | None:
        return self._last_forward

    @property
    def _rerunning(self) -> bool:
        """The innermost module running was entered inside backward (a re-run)."""
        return bool(self._rerun) and self._rerun[-1]

    def op_now(self) -> int | None:
        """The forward op running now, or whose backward (or re-run: checkpointing) runs now."""
        node = tp.current_autograd_node()
        if node is None or self._rerunning:
            return self._last_forward
        return self.op_of_node(node)

    def record(self, func: Any, node: Any, out: Any, timer: Timer | int, inputs: Any) -> None:
        """An op that ran (``inputs``: its arguments), timed by ``timer``; ``node``: the
        autograd node running it in backward, else None."""
        if node is not None:
            if self._rerunning:
                self._record_rerun(func, out, timer)
            else:
                self._record_backward(func, node, timer)
            return
        phase = OPTIMIZER if self._steps.runs_update(inputs, out, bool(self._stack)) else FORWARD
        module = OPTIMIZER_PATH if phase == OPTIMIZER else (self._stack[-1] if self._stack else "")
        name = func.overloadpacket.__name__
        record = OpRecord(
            index=len(self.records),
            name=name,
            module=module,
            phase=phase,
            frames=self._capture(),
        )
        self.records.append(record)
        self.charged = record
        self._timers.append((record, False, timer))
        if phase == FORWARD:
            self._last_forward = record.index
            self._link_outputs(record.index, out)

    def _link_outputs(self, index: int, out: Any) -> None:
        """The node autograd attaches to ``out`` (only after its op returns) is resolved to
        record ``index`` at the next dispatch (``resolve_pending``)."""
        leaves = tensors_in(out)
        if leaves:
            self.pending.append((index, weakref.ref(leaves[0])))

    def _record_rerun(self, func: Any, out: Any, timer: Timer | int) -> None:
        """A forward op that checkpointing runs again inside backward (``reruns.py``)."""
        module, name = self._stack[-1], func.overloadpacket.__name__
        record = (self._reruns.repeated(module, name)
                  or self._aggregate((module, f"rerun:{name}"), name, module))
        self.charged = record
        self._last_forward = record.index
        self._timers.append((record, True, timer))
        self._link_outputs(record.index, out)  # a reentrant re-run's nested backward runs them

    def _record_backward(self, func: Any, node: Any, timer: Timer | int) -> None:
        self.charged = self._backward_record(node)
        self._timers.append((self.charged, True, timer))

    def _backward_record(self, node: Any) -> OpRecord:
        """The record an op run by autograd ``node`` adds its time to: the forward op that made
        the node (by sequence number), else one per parameter whose gradient it accumulates,
        else one per node name (a double backward's nodes, which no forward op made)."""
        index = self._by_seq.get(tp.sequence_nr(node))
        if index is not None:
            return self.records[index]
        if tp.is_accumulate_grad(node):
            variable = tp.accumulated_variable(node)
            name = self.param_names.get(id(variable)) if variable is not None else None
            if name is not None:
                self.accumulated.add(name)
                module = name.rpartition(".")[0]
                key = (module, f"accumulate_grad:{name}")
                return self._aggregate(key, "accumulate_grad", module, parameter=name)
        return self._aggregate(("", node.name()), node.name(), "")

    def _aggregate(
        self, key: tuple[str, str], name: str, module: str, parameter: str | None = None
    ) -> OpRecord:
        record = self._aggregates.get(key)
        if record is None:
            record = OpRecord(len(self.records), name, module, BACKWARD, parameter=parameter)
            self._aggregates[key] = record
            self.records.append(record)
        return record

    # ---- context manager ------------------------------------------------------------------
    def __enter__(self) -> OperationTracker:
        try:
            # Our global module hooks make a compiled module warn at every call that they fire
            # for it too; they are ours to handle, not the user's to read (compiled.py)
            quiet_compiled_module_warning()
            self._handles.append(
                nn.modules.module.register_module_forward_pre_hook(self._pre_hook)
            )
            self._handles.append(
                nn.modules.module.register_module_forward_hook(self._post_hook, always_call=True)
            )
            self._handles.extend(tp.register_optimizer_step_hooks(self._step_pre, self._step_post))
            self._handles.extend(gradient_hooks(self._parameters,
                                                lambda _, grad: self._steps.returned(grad)))
            self._mode = OpMode(self, self.riders)
            self.device.synchronize()
            if self.hold_ms > 0:
                self.device.hold_queue(self.hold_ms)  # after the sync, or it would drain
            self._started = time.perf_counter_ns()
            self._mode.__enter__()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(*exc)
        finally:
            self._mode = None
            self._release()
            host_ms = (time.perf_counter_ns() - self._started) / 1e6
            self.device.synchronize()
            # With the queue held, the sync also waits for the spin: the host's time is the one
            # that describes the instrumented iteration.
            self.wall_ms = host_ms if self.hold_ms > 0 else (
                (time.perf_counter_ns() - self._started) / 1e6)
            self.resolve_pending()
            self._stack.clear()
            self._rerun.clear()
            self._steps = OptimizerSteps(self._parameters)

    def _release(self) -> None:
        """Remove the hooks."""
        while self._handles:
            self._handles.pop().remove()

    def finish(self) -> None:
        """Read every timer (after the exit's synchronize) into the records; drop timers."""
        for record, backward, timer in self._timers:
            elapsed = timer / 1e6 if isinstance(timer, int) else timer.elapsed_ms()
            if backward:
                record.backward_ms = (record.backward_ms or 0.0) + elapsed
            else:
                record.forward_ms += elapsed
        self._timers.clear()
        self.pending.clear()
        counts: dict[tuple[str, str], int] = {}
        for record in self.records:
            k = counts.get((record.module, record.name), 0)
            counts[(record.module, record.name)] = k + 1
            record.key = f"{record.name}#{k}"

    def ops_ms(self) -> float:
        """Σ of all op times: forward, backward and optimizer."""
        return sum(r.forward_ms + (r.backward_ms or 0.0) for r in self.records)

    def scale(self, factor: float) -> None:
        """Multiply every op time by ``factor`` (their shares of Σ stay as measured)."""
        for record in self.records:
            record.forward_ms *= factor
            if record.backward_ms is not None:
                record.backward_ms *= factor

    def live_optimizers(self) -> list[Any]:
        return [opt for opt in (ref() for ref in self.optimizers) if opt is not None]


def merge_median(first: OperationTracker, others: list[OperationTracker]) -> bool:
    """Replace ``first``'s op times by the per-op median over all runs; False if runs differ.

    One in-situ sample per op is at the mercy of a preemption; the median of three drops such
    spikes. Runs are comparable only when they ran the same ops in the same modules in the
    same order (no data-dependent control flow); otherwise ``first`` is kept as is.
    """
    def shape(tracker: OperationTracker) -> list[tuple[str, str, str]]:
        return [(r.module, r.name, r.phase) for r in tracker.records]

    reference = shape(first)
    runs = [t for t in others if shape(t) == reference]
    if len(runs) != len(others):
        return False
    for i, record in enumerate(first.records):
        forward = sorted([record.forward_ms, *(t.records[i].forward_ms for t in runs)])
        record.forward_ms = forward[len(forward) // 2]
        if record.backward_ms is not None:
            backward = sorted(
                [record.backward_ms, *((t.records[i].backward_ms or 0.0) for t in runs)]
            )
            record.backward_ms = backward[len(backward) // 2]
    walls = sorted([first.wall_ms, *(t.wall_ms for t in runs)])
    first.wall_ms = walls[len(walls) // 2]
    return True

"""What was alive at the peak of one iteration, by what created it.

Over one warm iteration a dispatch mode follows every storage on the device: those alive when
the iteration starts (parameters, buffers, gradients, optimizer state, the inputs, named by
identity) and every storage an op creates (an output whose storage is none of the op's inputs'
and not already alive), until it is freed. The moment the tracked bytes are highest is the
peak; the storages alive then are put in categories:

- by identity at the end of the iteration, for storages that lived to the end: parameters,
  buffers, gradients (``.grad``), optimizer state (tensors in ``optimizer.state``), inputs;
  gradients also as backward accumulates them, or ``torch.autograd.grad`` returns them;
- else by the phase that created them: forward → activations (forward outputs still alive:
  saved for backward, or held by the caller), backward → backward temporaries (activation
  gradients and other tensors backward creates), ``optimizer.step`` → optimizer temporaries.

What the tracker cannot see is measured around it (``memory_run.py``): the allocator's bytes
at the iteration's peak beyond the tracked ones are what kernels allocate for themselves
(oneDNN reorders, BLAS workspaces: "kernel workspace"); memory alive before the iteration that
nothing names is the rest of the peak ("other", ``Categories.at_peak``).

Known limitation: the tracked moment of the peak stands for the allocator's; an allocation the
tracker cannot see at another moment (a large kernel workspace) moves the true peak there, and
"other" then also holds the difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from skyline_nb.categories import Category
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.leaves import tensors_in
from skyline_nb.profiler.memory import (
    grad_owners,
    named_tensors,
    optimizer_state_tensors,
    storage_keys,
    unique_parameters,
)
from skyline_nb.profiler.optimizer_steps import OptimizerSteps, gradient_hooks

DispatchMode = tp.dispatch_mode_base()

FORWARD, BACKWARD, OPTIMIZER = "forward", "backward", "optimizer"
_BY_PHASE = {
    FORWARD: Category.ACTIVATIONS,
    BACKWARD: Category.BACKWARD_TEMPORARIES,
    OPTIMIZER: Category.OPTIMIZER_TEMPORARIES,
}


@dataclass
class _Storage:
    nbytes: int
    born: int  # event index; 0 for storages alive at the start
    phase: str
    creator: int | None  # forward op index (``where``), for per-op attribution
    named: str | None = None  # the category of a storage alive at the start, or a gradient's
    died: int | None = None
    owner: int | None = None  # id of the parameter whose gradient backward made it


@dataclass
class PeakSnapshot:
    """The tracked peak: bytes by category, forward-created bytes by creating op, and where it
    happened (phase, and in forward or backward the module and op running then, when known)."""

    tracked_bytes: int
    by_category: dict[str, int]
    by_op: dict[int, int] = field(default_factory=dict)
    phase: str = FORWARD
    place: tuple[str, str] | None = None
    # (phase, module path) -> most bytes its forward (or backward) added, descendants counted
    module_added: dict[tuple[str, str], int] = field(default_factory=dict)
    # parameter name -> bytes of its gradients alive at the peak (the gradients category)
    grads_by_param: dict[str, int] = field(default_factory=dict)


class PeakTracker(DispatchMode):
    """Storages alive over one iteration and the snapshot at its peak (see the module doc).

    ``start``: (category, tensor) of what is named alive when the iteration starts, read when
    the tracker starts following (entered, or ``riding``), not when it is made: an iteration
    run in between (``measured_step``'s first) leaves new gradients, an input's own among them;
    ``where()`` (optional) names the forward op running now or whose backward runs now: (op
    index, module path, op name).
    """

    def __init__(
        self,
        device: torch.device,
        start: Iterable[tuple[str, Any]],
        where: Callable[[], tuple[int, str, str] | None] | None = None,
    ) -> None:
        super().__init__()
        self._on_device = tp.on_device_type(device.type)
        tp.held_once()  # its tensor made here, not in the allocator's window around the steps
        self.where = where
        self.events = 0
        self.live = 0
        self.start_bytes = 0  # of the storages alive at the start
        self.peak = -1
        self.peak_event = 0
        self.peak_phase = FORWARD
        self.peak_place: tuple[int, str, str] | None = None
        self._storages: dict[int, _Storage] = {}  # alive, by key
        self._dead: list[_Storage] = []
        self._modules = 0  # module forwards running (an update by hand runs in none)
        self._hooks: list[Any] = []
        self.optimizers: list[Any] = []  # seen stepping
        # (phase, module path) -> [tracked bytes before its first op, highest since]
        self._module_live: dict[tuple[str, str], list[int]] = {}
        self._chains: dict[tuple[str, str], list[list[int]]] = {}  # _note_module's, by key
        # (phase, forward op index or None, tracked bytes) after every op, in order
        self.timeline: list[tuple[str, int | None, int]] = []
        self._weights: list[torch.Tensor] = []
        self._start: Iterable[tuple[str, Any]] | None = start
        self._steps = OptimizerSteps(self._weights)
        self._returned: dict[int, list[_Storage]] = {}  # param id -> gradients: _gradient

    def _begin(self) -> None:
        """Adopt what is named alive now (``start``), once."""
        if self._start is None:
            return
        for category, tensor in self._start:
            self._adopt(category, tensor)
            if category == Category.WEIGHTS:
                self._weights.append(tensor)
        self._start = None
        self._steps = OptimizerSteps(self._weights)
        self._note_peak(*self._now())

    # ---- following storages ---------------------------------------------------------------
    def _adopt(self, category: str, tensor: Any) -> None:
        if not isinstance(tensor, torch.Tensor) or not self._on_device(tensor):
            return
        for key, part in tp.keyed_parts(tensor):
            if key in self._storages:
                continue
            nbytes = self._follow(key, part, born=0, phase=FORWARD, creator=None,
                                  named=category)
            self.start_bytes += nbytes
            if self.peak >= 0:  # alive since the start: at the peak found so far too
                self.peak += nbytes

    def _follow(self, key: int, tensor: torch.Tensor, born: int, phase: str,
                creator: int | None, named: str | None = None) -> int:
        nbytes = tp.storage_nbytes(tensor)
        self._storages[key] = _Storage(nbytes, born, phase, creator, named)
        self.live += nbytes
        tp.on_storage_free(tensor, self._freed, key)
        return nbytes

    def _freed(self, key: int) -> None:
        storage = self._storages.pop(key, None)
        if storage is None:
            return
        self.events += 1
        storage.died = self.events
        self.live -= storage.nbytes
        self._dead.append(storage)

    def _now(self, inputs: Any = (), out: Any = ()) -> tuple[str, tuple[int, str, str] | None]:
        """The phase of an op on ``inputs`` that returned ``out``, running now
        (``OptimizerSteps.runs_update``), and (outside the optimizer) the forward op ``where``
        names."""
        if tp.current_autograd_node() is not None:
            phase = BACKWARD
        else:
            update = self._steps.runs_update(inputs, out, self._modules > 0)
            phase = OPTIMIZER if update else FORWARD
        in_model = self.where is not None and phase != OPTIMIZER
        return phase, self.where() if in_model else None

    def _note_peak(self, phase: str, place: tuple[int, str, str] | None) -> None:
        if self.live > self.peak:
            self.peak, self.peak_event = self.live, self.events
            self.peak_phase, self.peak_place = phase, place

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        before = self.before_op()
        out = func(*args, **kwargs)
        self.after_op(func, args, kwargs, out, before)
        return out

    def before_op(self) -> int:
        """The tracked bytes before an op (as the op tracker's rider too: ``op_mode.py``)."""
        return self.live

    def after_op(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any,
                 before: int) -> None:
        """Follow the storages the op created; note the peak and the module's bytes."""
        phase, place = self._now((args, kwargs), out)
        created, inputs = False, None
        for leaf in tensors_in(out):
            if not self._on_device(leaf):
                continue
            for key, part in tp.keyed_parts(leaf):
                if key in self._storages:
                    continue
                # held elsewhere too: an input's, maybe (the inputs are read only then, which
                # took half of one of a Llama's iterations from its memory run when read always)
                if tp.storage_shared(key):
                    inputs = inputs if inputs is not None else storage_keys(
                        t for t in tensors_in((args, kwargs)) if self._on_device(t))
                    if key in inputs:
                        continue
                if not created:
                    self.events += 1
                    created = True
                self._follow(key, part, self.events, phase,
                             place[0] if place is not None and phase == FORWARD else None)
        if created:
            self._note_peak(phase, place)
        self._note_module(before, phase, place)

    def _note_module(self, before: int, phase: str, place: tuple[int, str, str] | None) -> None:
        """The module whose op just ran (forward, or its backward), and its ancestors: the
        tracked bytes before their first op in this phase and the highest since."""
        if self.where is None:
            return
        self.timeline.append((phase, None if place is None else place[0], self.live))
        if place is None:
            return
        chain = self._chains.get((phase, place[1]))
        if chain is None:  # the module's and its ancestors' entries, found once
            chain = self._chains[(phase, place[1])] = []
            path = place[1]
            while True:
                chain.append(self._module_live.setdefault((phase, path), [before, before]))
                if not path:
                    break
                path = path.rpartition(".")[0]
        high = max(before, self.live)
        for seen in chain:
            if high > seen[1]:
                seen[1] = high

    # ---- the optimizer step ---------------------------------------------------------------
    def __enter__(self) -> PeakTracker:
        self._hook()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        self._unhook()
        return super().__exit__(*exc)

    @contextmanager
    def riding(self) -> Iterator[PeakTracker]:
        """Its optimizer hooks without its own mode: it rides the op tracker's
        (``op_mode.OpRider``)."""
        self._hook()
        try:
            yield self
        finally:
            self._unhook()

    def _hook(self) -> None:
        self._begin()
        self._hooks = [*tp.register_optimizer_step_hooks(self._step_pre, self._step_post),
                       nn.modules.module.register_module_forward_pre_hook(self._module_pre),
                       nn.modules.module.register_module_forward_hook(self._module_post,
                                                                      always_call=True)]
        self._hooks += [p.register_post_accumulate_grad_hook(self._accumulated)
                        for p in self._weights if p.requires_grad]
        self._hooks += gradient_hooks(self._weights, self._gradient)

    def _gradient(self, param: torch.Tensor, grad: torch.Tensor) -> None:
        """Autograd computed a gradient of ``param``: an update by hand may start from it, and
        unless backward accumulates it into ``.grad`` (``_accumulated``), ``autograd.grad``
        returned it: a gradient while it lives (``_unhook`` names it), no backward temporary."""
        self._steps.returned(grad)
        for key, _ in tp.keyed_parts(grad):
            storage = self._storages.get(key)
            if storage is not None:
                self._returned.setdefault(id(param), []).append(storage)

    def _accumulated(self, param: torch.Tensor) -> None:
        """Backward has put a gradient in ``param.grad``: its storage is a gradient for as long
        as it lives. Named only by identity at the end of the iteration, a step that ends by
        ``zero_grad()`` (``opt.step(); opt.zero_grad()``, the tutorials' update by hand, a
        Trainer's order) had none: its gradients counted as backward temporaries."""
        self._returned.pop(id(param), None)
        grad = param.grad
        if grad is None:
            return
        for key, _ in tp.keyed_parts(grad):
            storage = self._storages.get(key)
            if storage is not None and storage.named in (None, Category.GRADS):
                storage.named, storage.owner = Category.GRADS, id(param)

    def _module_pre(self, *_: Any) -> None:
        self._modules += 1

    def _module_post(self, *_: Any) -> None:
        self._modules = max(0, self._modules - 1)

    def _unhook(self) -> None:
        for handle in self._hooks:
            handle.remove()
        self._hooks = []
        for owner, storages in self._returned.items():
            for storage in (s for s in storages if s.named is None):
                storage.named, storage.owner = Category.GRADS, owner
        self._returned = {}

    def _step_pre(self, optimizer: Any, *_: Any) -> None:
        """Optimizer state is alive since the start (a warm trial) but only reachable now."""
        self._steps.enter(optimizer)
        if all(o is not optimizer for o in self.optimizers):
            self.optimizers.append(optimizer)
        for tensor in optimizer_state_tensors([optimizer]):
            self._adopt(Category.OPTIMIZER, tensor)

    def _step_post(self, *_: Any) -> None:
        self._steps.leave()

    # ---- the snapshot ---------------------------------------------------------------------
    def snapshot(self, end: Iterable[tuple[str, Any]],
                 grad_owners: dict[Any, str] | None = None,
                 param_names: dict[int, str] | None = None) -> PeakSnapshot:
        """The peak's storages in categories; ``end``: (category, tensor) of what is named by
        identity when the iteration ends (parameters, buffers, ``.grad``, optimizer state,
        inputs); ``grad_owners``: {storage key: parameter name} of the gradients then, and
        ``param_names`` {id: name} of the parameters (for gradients gone by then), which split
        the gradients alive at the peak over their parameters."""
        named = {}
        for category, tensor in end:
            if isinstance(tensor, torch.Tensor):
                for key, _ in tp.keyed_parts(tensor):
                    named.setdefault(key, category)
        owners = grad_owners or {}
        by_category: dict[str, int] = {}
        by_op: dict[int, int] = {}
        by_param: dict[str, int] = {}
        for key, storage in self._alive_at_peak():
            if storage.named is not None:
                category = storage.named
            elif key is not None and key in named:
                category = named[key]
            else:
                category = _BY_PHASE[storage.phase]
            by_category[category] = by_category.get(category, 0) + storage.nbytes
            if category == Category.ACTIVATIONS and storage.creator is not None:
                by_op[storage.creator] = by_op.get(storage.creator, 0) + storage.nbytes
            elif category == Category.GRADS:
                owner = owners.get(key) if key is not None else None
                if owner is None and storage.owner is not None:
                    owner = (param_names or {}).get(storage.owner)
                if owner is not None:
                    by_param[owner] = by_param.get(owner, 0) + storage.nbytes
        place = None if self.peak_place is None else self.peak_place[1:]
        added = {key: high - low for key, (low, high) in self._module_live.items()}
        return PeakSnapshot(max(self.peak, 0), by_category, by_op, self.peak_phase, place, added,
                            by_param)

    def categorized(self, added: int, model: Any, inputs: Iterable[Any]) -> PeakSnapshot:
        """The snapshot at the peak, with the kernels' own workspace: ``added`` (the allocator's
        bytes at the iteration's peak beyond what was alive when it started) minus what the
        tracker saw added by then."""
        names = {id(param): name for name, param in unique_parameters(model)}
        peak = self.snapshot(named_tensors(model, inputs, self.optimizers), grad_owners(model),
                             names)
        peak.by_category[Category.KERNEL_WORKSPACE] = max(0, added - (self.peak - self.start_bytes))
        return peak

    def _alive_at_peak(self) -> Iterable[tuple[int | None, _Storage]]:
        """(key, storage) alive at the peak; key None for storages freed since (their key may
        name another storage now)."""
        for key, storage in self._storages.items():
            if storage.born <= self.peak_event:
                yield key, storage
        for storage in self._dead:
            if storage.born <= self.peak_event < (storage.died or 0):
                yield None, storage

    def close(self) -> None:
        """Stop following; finalizers already registered become no-ops."""
        self._storages.clear()


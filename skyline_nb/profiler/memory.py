"""Level 3, memory: live-storage peak (CPU), activations per op, weights, grads, optimizer state.

Memory is counted by STORAGE, never by tensor: views, in-place results and tied weights share a
storage and must count once. Weights and grads are exact (``numel * element_size`` per named
parameter). Activations are the storages autograd saves for backward (``saved_tensors_hooks``),
minus parameters and the user's inputs, which have their own categories. Each saved storage is
attributed to the forward op whose backward node unpacks it (exact, through the node's sequence
number); storages never unpacked fall back to the op that ran when they were packed.

Known limitations: the CPU tracker only sees storages created by aten ops while it is active
(``torch.from_numpy`` memory and allocations inside C++ extensions that bypass the dispatcher
are invisible); the peak it reports is of the tracked window, which starts before the model is
built, so it includes weights, inputs and optimizer state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from skyline_nb.categories import Category
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.device import CPUOutOfMemoryError
from skyline_nb.profiler.errors import in_bytes
from skyline_nb.profiler.leaves import tensors_in

DispatchMode = tp.dispatch_mode_base()


class LiveStorageTracker(DispatchMode):
    """Counts bytes of live storages on one device, with their peak; enforces a budget.

    Every op output whose storage is new is added and a finalizer subtracts it when the storage
    is freed, so ``live`` is exact for what aten allocated while the tracker was active.
    """

    def __init__(self, device: torch.device, budget: int | None = None) -> None:
        super().__init__()
        self._on_device = tp.on_device_type(device.type)
        self.budget = budget
        self.live = 0
        self.peak = 0
        self._sizes: dict[int, int] = {}
        self.active = True

    def _freed(self, key: int, nbytes: int) -> None:
        if self._sizes.pop(key, None) is not None:
            self.live -= nbytes

    def track(self, tensor: torch.Tensor) -> None:
        if not self._on_device(tensor):
            return
        for key, part in tp.keyed_parts(tensor):
            self._track_storage(key, part)

    def _track_storage(self, key: int, tensor: torch.Tensor) -> None:
        nbytes = tp.storage_nbytes(tensor)
        known = self._sizes.get(key)
        if known == nbytes:
            return
        if known is None:
            tp.on_storage_free(tensor, self._freed, key, nbytes)
            self._sizes[key] = nbytes
            self.live += nbytes
        else:  # resized in place (out= ops); the finalizer subtracts the first size only
            self._sizes[key] = nbytes
            self.live += nbytes - known
        if self.live > self.peak:
            self.peak = self.live
            if self.budget is not None and self.peak > self.budget:
                raise CPUOutOfMemoryError(
                    f"the iteration needs more than the CPU memory budget of "
                    f"{in_bytes(self.budget)}",
                    self.peak, stopped=True)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.active:
            # a view or alias of an input (a slice of the user's dataset, ``.data`` while a
            # held model is copied) is not new memory: counted whole, a 20 MB dataset the
            # inputs are sliced from made every memory budget too small
            inputs = storage_keys(tensors_in((args, kwargs))) if func.is_view else set()
            for leaf in tensors_in(out):
                if not inputs or not storage_keys([leaf]) <= inputs:
                    self.track(leaf)
        return out

    def restart_peak(self) -> None:
        """A new peak window, from what is alive now."""
        self.peak = self.live

    def close(self) -> None:
        """Stop counting; finalizers already registered become no-ops."""
        self.active = False
        self._sizes.clear()


@dataclass
class SavedRecord:
    nbytes: int
    pack_op: int | None  # op index current when packed (fallback attribution)
    saved_at: int  # ``SavedTensorTracker.clock`` when first packed
    unpack_ops: set[int] = field(default_factory=set)
    freed_at: int | None = None  # the clock when its storage was freed; None: alive at the end


# (first saved, last freed) of an op's saved storages on the tracker's clock; None: one was
# still alive when the iteration ended
Span = tuple[int, int | None]


class SavedTensorTracker:
    """Records the storages autograd saves for backward, attributed to forward ops, and when
    each was saved and freed (``clock``: one tick per storage saved or freed), so that a line
    run in a loop whose runs free theirs in turn (gradient accumulation) is seen to hold one
    run's at a time (``spans_per_op``).

    A storage is one record while it lives: its key (the StorageImpl's address) is free for
    another storage once it is freed. Until session 57 records were kept by key alone, and a
    later storage at a freed one's address was not counted: an MLP stepped over 4
    micro-batches saved 198,540 B of its 264,708.

    ``current_op`` returns the index of the last forward op dispatched; ``op_of_node`` maps the
    autograd node running a backward to the index of the forward op that created it.
    """

    def __init__(
        self,
        excluded_keys: set[int],
        current_op: Callable[[], int | None],
        op_of_node: Callable[[Any], int | None],
    ) -> None:
        self.excluded = excluded_keys
        self.current_op = current_op
        self.op_of_node = op_of_node
        self.records: list[SavedRecord] = []
        self._alive: dict[int, SavedRecord] = {}  # by storage key, while active and alive
        self.clock = 0

    def pack(self, tensor: torch.Tensor) -> Any:
        if isinstance(tensor, torch.nn.Parameter):
            return ((), tensor)
        records = []
        for key, part in tp.keyed_parts(tensor):  # a sparse tensor's: its indices and values
            if key in self.excluded:
                continue
            record = self._alive.get(key)
            if record is None:
                self.clock += 1
                record = SavedRecord(tp.storage_nbytes(part), self.current_op(), self.clock)
                self._alive[key] = record
                self.records.append(record)
                tp.on_storage_free(part, self._freed, key)
            records.append(record)
        return (tuple(records), tensor)

    def _freed(self, key: int) -> None:
        record = self._alive.pop(key, None)
        if record is not None:
            self.clock += 1
            record.freed_at = self.clock

    def unpack(self, packed: Any) -> torch.Tensor:
        records, tensor = packed
        if records:
            node = tp.current_autograd_node()
            op = self.op_of_node(node) if node is not None else None
            if op is not None:
                for record in records:
                    record.unpack_ops.add(op)
        return tensor

    @contextmanager
    def active(self) -> Any:
        try:
            with torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
                yield self
        finally:
            self._alive = {}  # frees after the iteration are not its: alive at its end

    @staticmethod
    def _owner(record: SavedRecord) -> int | None:
        """The op a storage counts at: its earliest unpacking op, else the one that packed it."""
        return min(record.unpack_ops) if record.unpack_ops else record.pack_op

    def bytes_per_op(self) -> dict[int | None, int]:
        """Bytes per forward op index; each storage counted once, at its earliest saving op."""
        per_op: dict[int | None, int] = {}
        for record in self.records:
            owner = self._owner(record)
            per_op[owner] = per_op.get(owner, 0) + record.nbytes
        return per_op

    def spans_per_op(self) -> dict[int | None, Span]:
        """Per forward op index (as ``bytes_per_op``), when its storages were first saved and
        last freed, on ``clock``."""
        per_op: dict[int | None, Span] = {}
        for record in self.records:
            owner = self._owner(record)
            span = (record.saved_at, record.freed_at)
            per_op[owner] = merged_span(per_op[owner], span) if owner in per_op else span
        return per_op

    def total_bytes(self) -> int:
        return sum(r.nbytes for r in self.records)


def merged_span(a: Span, b: Span) -> Span:
    """The span covering both: the first start, the last end (None, alive at the end, last)."""
    end = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return (min(a[0], b[0]), end)


def tensor_bytes(tensor: torch.Tensor) -> int:
    """The bytes of ``tensor``'s elements (of its indices and values when sparse)."""
    if tensor.layout == torch.strided:
        return tensor.numel() * tensor.element_size()
    return sum(part.numel() * part.element_size() for part in tp.storage_parts(tensor))


def unique_parameters(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """``named_parameters`` with tied weights once (under the first name PyTorch gives them),
    named as the user wrote them (``user_path``)."""
    return [(user_path(name), p) for name, p in model.named_parameters(remove_duplicate=True)]


def user_path(name: str) -> str:
    """A module or parameter path without the ``_orig_mod`` that ``torch.compile``'s wrapper
    puts in it: ``fc1.weight``, not ``_orig_mod.fc1.weight``; a compiled module and the module
    it wraps share one path (the report's tree showed an ``OptimizedModule`` root whose only
    child ``_orig_mod`` held the model)."""
    return ".".join(part for part in name.split(".") if part != "_orig_mod")


def storage_keys(tensors: Iterable[Any]) -> set[int]:
    keys = set()
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor):
            keys.update(key for key, _ in tp.keyed_parts(tensor))
    return keys


def optimizer_state_tensors(optimizers: Iterable[Any]) -> Iterator[torch.Tensor]:
    """The tensors in optimizers' ``state`` (momentum, Adam moments, step counts)."""
    for optimizer in optimizers:
        for state in getattr(optimizer, "state", {}).values():
            yield from tensors_in(state)


class ParameterOrigins:
    """Where each parameter was created in the user's code (a global registration hook).

    Active while the model provider runs; maps ``id(param)`` to the frames captured when a
    module registered it (``self.fc = nn.Linear(...)`` in the user's ``__init__``).
    """

    def __init__(self, capture: Callable[[], list[Any]]) -> None:
        self._capture = capture
        self.frames: dict[int, list[Any]] = {}
        self._handle: Any = None

    def _hook(self, module: Any, name: str, param: Any) -> None:
        if param is not None and id(param) not in self.frames:
            self.frames[id(param)] = self._capture()

    def __enter__(self) -> ParameterOrigins:
        self._handle = tp.register_parameter_registration_hook(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


def grad_owners(model: Any) -> dict[Any, str]:
    """{storage key: parameter name} of the parameters' gradients now."""
    return {key: name for name, param in unique_parameters(model)
            if param.grad is not None for key, _ in tp.keyed_parts(param.grad)}


def named_tensors(model: Any, inputs: Iterable[Any],
                  optimizers: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """(category, tensor) of what is named by identity: parameters, their gradients, buffers,
    optimizer state, the inputs and their gradients (an input that requires grad, e.g. for an
    adversarial step or a saliency map, gets a ``.grad`` of its own batch's size that no
    ``optimizer.zero_grad()`` clears: it read as "other" memory)."""
    for _, param in unique_parameters(model):
        yield Category.WEIGHTS, param
        if param.grad is not None:
            yield Category.GRADS, param.grad
    for buffer in model.buffers():
        yield Category.BUFFERS, buffer
    for tensor in optimizer_state_tensors(optimizers):
        yield Category.OPTIMIZER, tensor
    inputs = list(inputs)
    theirs = tp.borrowed(inputs)  # slices of the user's dataset are theirs
    for tensor in inputs:
        if not isinstance(tensor, torch.Tensor):
            continue
        if id(tensor) not in theirs:
            yield Category.INPUTS, tensor
        if tensor.is_leaf and tensor.grad is not None:
            yield Category.INPUTS, tensor.grad

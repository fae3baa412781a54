"""Every private or semi-private PyTorch API skyline_nb touches, in one place, with guards
(and ``allocator_reports.py`` beside it: the CPU allocator's reports through kineto).

PyTorch does not promise these names; keeping them here means a torch upgrade breaks one file
with a clear message instead of failing deep inside a measurement. Each accessor checks the name
once and raises ``UnsupportedTorchError`` naming the missing API and the torch version.
Tested against torch 2.13 (CPU and CUDA builds); the oldest supported is 2.1.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch

from skyline_nb.profiler.interrupts import interrupts_held

MIN_TORCH = (2, 1)


class UnsupportedTorchError(RuntimeError):
    """This torch lacks an internal API the profiler needs."""


def torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def need(owner: Any, name: str, where: str) -> Any:
    value = getattr(owner, name, None)
    if value is None:
        raise UnsupportedTorchError(
            f"torch {torch.__version__} has no {where}.{name}; skyline_nb needs torch >= "
            f"{MIN_TORCH[0]}.{MIN_TORCH[1]} with this API"
        )
    return value


# ---- dispatch modes -----------------------------------------------------------------------
def dispatch_mode_base() -> type:
    """``TorchDispatchMode``: sees every aten op below autograd (forward, backward, optimizer)."""
    from torch.utils import _python_dispatch

    return need(_python_dispatch, "TorchDispatchMode", "torch.utils._python_dispatch")


@contextlib.contextmanager
def outside_modes() -> Iterator[None]:
    """No dispatch mode or ``TorchFunctionMode`` sees what runs inside (the profiler's own
    marker allocations stay out of its trackers' records and the user's modes). A Ctrl+C
    meanwhile is raised once the modes are back (``interrupts.interrupts_held``)."""
    from torch.utils import _python_dispatch

    disable = need(_python_dispatch, "_disable_current_modes", "torch.utils._python_dispatch")
    held: list[int] = []
    try:
        with interrupts_held() as held, need(torch._C, "DisableTorchFunction", "torch._C")(), \
                disable():
            yield
    finally:
        if held:
            raise KeyboardInterrupt


# ---- autograd graph -----------------------------------------------------------------------
def fwd_grad_enabled() -> bool:
    """Whether forward-mode AD is on (``torch.autograd.forward_ad``'s global switch)."""
    return bool(need(torch._C, "_is_fwd_grad_enabled", "torch._C")())


def set_fwd_grad_enabled(enabled: bool) -> None:
    need(torch._C, "_set_fwd_grad_enabled", "torch._C")(enabled)


def current_autograd_node() -> Any | None:
    """The autograd Node whose backward is running on this thread, or None in forward."""
    return need(torch._C, "_current_autograd_node", "torch._C")()


def sequence_nr(node: Any) -> int:
    """A Node's sequence number: equal for a forward op's grad_fn and its backward run."""
    return int(node._sequence_nr())


def accumulated_variable(node: Any) -> torch.Tensor | None:
    """For an AccumulateGrad node, the leaf tensor (parameter) it accumulates into."""
    return getattr(node, "variable", None)


def is_accumulate_grad(node: Any) -> bool:
    return "AccumulateGrad" in node.name()


def at_backward_end(callback: Callable[[], None]) -> None:
    """Call ``callback`` when the backward pass running now has finished (the engine's final
    callbacks, as DDP finishes its gradient reduction); only from inside that pass."""
    engine = need(torch.autograd.Variable, "_execution_engine", "torch.autograd.Variable")
    need(engine, "queue_callback", "torch.autograd.Variable._execution_engine")(callback)


# ---- storages -----------------------------------------------------------------------------
_SPARSE_PARTS: dict[Any, tuple[str, ...]] = {
    torch.sparse_coo: ("_indices", "_values"),
    torch.sparse_csr: ("crow_indices", "col_indices", "values"),
    torch.sparse_bsr: ("crow_indices", "col_indices", "values"),
    torch.sparse_csc: ("ccol_indices", "row_indices", "values"),
    torch.sparse_bsc: ("ccol_indices", "row_indices", "values"),
}


def storage_parts(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The strided tensors whose storages hold ``tensor``'s memory: the tensor itself; a sparse
    tensor's index and value tensors (``nn.Embedding(sparse=True)``'s gradients, a sparse
    adjacency matrix: a sparse tensor has no storage of its own); a wrapper subclass's inner
    tensors (``__tensor_flatten__``); none for a tensor without memory (meta)."""
    layout = tensor.layout
    if layout == torch.strided:
        try:
            tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):  # a wrapper subclass: its inner tensors
            return _inner_parts(tensor)
        return [] if tensor.is_meta else [tensor]
    names = _SPARSE_PARTS.get(layout)
    if names is None:
        return _inner_parts(tensor)
    return [part for name in names for part in storage_parts(getattr(tensor, name)())]


def _inner_parts(tensor: torch.Tensor) -> list[torch.Tensor]:
    flatten = getattr(tensor, "__tensor_flatten__", None)
    if flatten is None:
        return []
    names, _ = flatten()
    return [part for name in names for part in storage_parts(getattr(tensor, name))]


def storage_key(tensor: torch.Tensor) -> int:
    """An id for the StorageImpl behind ``tensor``: stable while the storage lives."""
    return int(tensor.untyped_storage()._cdata)


def keyed_parts(tensor: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
    """``(storage_key(part), part)`` for each of ``storage_parts(tensor)``. A plain strided
    tensor's storage is looked up once, not twice: the memory run's trackers do this for every
    tensor every op takes and returns."""
    if tensor.layout == torch.strided:
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):  # a wrapper subclass: storage_parts' case
            pass
        else:
            return [] if tensor.is_meta else [(int(storage._cdata), tensor)]
    return [(storage_key(part), part) for part in storage_parts(tensor)]


# a storage's reference count by its key (None: this torch has no such reader)
_storage_use_count: Callable[[int], int] | None = getattr(torch._C, "_storage_Use_Count", None)


def storage_shared(key: int) -> bool:
    """Whether a tensor other than the one ``keyed_parts`` read ``key`` from holds that storage
    (True where torch cannot say): an op's output that is the only one holding its storage is
    memory the op allocated, and no input's, without reading the op's inputs."""
    return _storage_use_count is None or _storage_use_count(key) > held_once()


@functools.cache
def held_once() -> int:
    """The use count of a storage one tensor holds, once ``keyed_parts`` read it (2 in torch
    2.13: the tensor and the Python storage object, which torch keeps as long as the storage).
    Read once per process, by allocating a tensor: call it outside any measured window."""
    if _storage_use_count is None:
        return 0
    with outside_modes():
        tensor = torch.empty(1)
        ((key, _),) = keyed_parts(tensor)
        return int(_storage_use_count(key))


def on_device_type(device_type: str) -> Callable[[torch.Tensor], bool]:
    """Whether a tensor is on a device of ``device_type``: read from ``is_cpu``/``is_cuda``
    where they say it, as ``tensor.device.type`` costs ~0.8 µs, eight times as much."""
    if device_type in ("cpu", "cuda"):
        return operator.attrgetter(f"is_{device_type}")
    return lambda tensor: tensor.device.type == device_type


def storage_nbytes(tensor: torch.Tensor) -> int:
    return int(tensor.untyped_storage().nbytes())


def borrowed(tensors: list[Any]) -> set[int]:
    """Ids of the strided ``tensors`` that all together span less of their storage than it
    holds: a batch sliced from a tensor the user keeps (``X[:batch_size]`` of a dataset in
    memory), whose memory is theirs, allocated before and kept after, not the batch's (its whole
    storage read as "inputs": 20.6 MB for a 64-row batch, and "other" −20.6 MB). Views that
    span theirs together (``tokens[:, :-1]`` and ``tokens[:, 1:]``) are the batch's own."""
    spans: dict[int, list[int]] = {}
    users: dict[int, list[int]] = {}
    for tensor in tensors:
        if (not isinstance(tensor, torch.Tensor) or tensor.layout != torch.strided
                or tensor.is_nested or tensor.numel() == 0):
            continue
        size, key = tensor.element_size(), storage_key(tensor)
        first = tensor.storage_offset()
        last = first + sum((n - 1) * step for n, step in zip(tensor.shape, tensor.stride(),
                                                              strict=True))
        span = spans.setdefault(key, [first * size, (last + 1) * size, storage_nbytes(tensor)])
        span[0], span[1] = min(span[0], first * size), max(span[1], (last + 1) * size)
        users.setdefault(key, []).append(id(tensor))
    return {ident for key, (low, high, nbytes) in spans.items() if high - low < nbytes
            for ident in users[key]}


def on_storage_free(tensor: torch.Tensor, callback: Callable[..., None], *args: Any) -> None:
    """Call ``callback(*args)`` when the storage behind ``tensor`` is freed.

    Relies on storage PyObject preservation (torch >= 2.0): the Python storage object lives as
    long as the C++ storage, so its finalizer runs exactly at the free.
    """
    weakref.finalize(tensor.untyped_storage(), callback, *args)


# ---- global state a measurement may leave behind (isolation.py puts it back) -------------
def global_hook_keys() -> dict[str, list[Any]]:
    """The keys of every global hook registry of ``nn.Module`` and ``torch.optim``."""
    return {name: list(registry) for name, registry in global_hook_registries()}


def remove_global_hooks_since(keys: dict[str, list[Any]]) -> None:
    """Remove the global hooks registered since ``keys = global_hook_keys()``."""
    for name, registry in global_hook_registries():
        before = set(keys.get(name, ()))
        for key in [k for k in registry if k not in before]:
            del registry[key]


def global_hook_registries() -> Iterator[tuple[str, dict[Any, Any]]]:
    """Each global hook registry (handle id -> hook) with its module-qualified name."""
    from torch.nn.modules import module
    from torch.optim import optimizer

    for owner in (module, optimizer):
        for name, value in sorted(vars(owner).items()):
            if name.startswith("_global_") and isinstance(value, dict):
                yield f"{owner.__name__}.{name}", value


def mode_stack_depths() -> tuple[int, int]:
    """How many dispatch modes and ``TorchFunctionMode``s are active."""
    return (int(need(torch._C, "_len_torch_dispatch_stack", "torch._C")()),
            int(need(torch._C, "_len_torch_function_stack", "torch._C")()))


def pop_modes_to(depths: tuple[int, int]) -> None:
    """Pop the dispatch and function modes pushed since ``depths = mode_stack_depths()``."""
    while mode_stack_depths()[0] > depths[0]:
        pop_dispatch_mode()
    while mode_stack_depths()[1] > depths[1]:
        need(torch._C, "_pop_torch_function_stack", "torch._C")()


def pop_dispatch_mode() -> None:
    """Take the top dispatch mode off the stack (torch 2.13 wants the mode's key; None: a user
    mode's)."""
    need(torch._C, "_pop_torch_dispatch_stack", "torch._C")(None)


def saved_tensors_hooks_top() -> Any:
    """The innermost ``saved_tensors_hooks`` pair, or None."""
    return need(torch._C._autograd, "_top_saved_tensors_default_hooks",
                 "torch._C._autograd")(False)


def pop_saved_tensors_hooks_to(top: Any) -> None:
    """Pop the saved-tensor hooks pushed since ``top = saved_tensors_hooks_top()``."""
    pop = need(torch._C._autograd, "_pop_saved_tensors_default_hooks", "torch._C._autograd")
    while (current := saved_tensors_hooks_top()) is not None and current != top:
        pop()


def flop_formulas() -> dict[Any, Callable[..., int]]:
    """``FlopCounterMode``'s formulas by op packet (called as it calls them)."""
    from torch.utils import flop_counter

    return dict(need(flop_counter, "flop_registry", "torch.utils.flop_counter"))


def profiler_running() -> bool:
    return bool(need(torch._C._autograd, "_profiler_enabled", "torch._C._autograd")())


def stop_profiler() -> None:
    """Stop a kineto profiler session, discarding its results."""
    need(torch._C._autograd, "_disable_profiler", "torch._C._autograd")()


def register_optimizer_step_hooks(
    pre: Callable[..., None], post: Callable[..., None]
) -> list[Any]:
    """Global optimizer step pre/post hooks (public in torch.optim.optimizer, not re-exported)."""
    from torch.optim import optimizer

    return [
        need(optimizer, "register_optimizer_step_pre_hook", "torch.optim.optimizer")(pre),
        need(optimizer, "register_optimizer_step_post_hook", "torch.optim.optimizer")(post),
    ]


def register_parameter_registration_hook(hook: Callable[..., Any]) -> Any:
    from torch.nn.modules import module

    return need(
        module, "register_module_parameter_registration_hook", "torch.nn.modules.module"
    )(hook)


def print_options() -> dict[str, Any] | None:
    """What ``torch.set_printoptions`` last set (torch has no getter), as its keywords; None
    where this torch keeps them elsewhere (they are then not put back, as before)."""
    options = getattr(getattr(torch, "_tensor_str", None), "PRINT_OPTS", None)
    if options is None:
        return None
    return {name: getattr(options, name)
            for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


def default_device_set() -> torch.device | None:
    """The device ``torch.set_default_device`` last set (None: unset), read from the context it
    keeps, not from ``torch.get_default_device``, which also reads a ``with torch.device(...)``
    block's and says "cpu" where none is set."""
    held = need(torch, "_GLOBAL_DEVICE_CONTEXT", "torch")
    # a thread-local holding the context; in older torch (2.1) the context itself, or None
    context = held if hasattr(held, "device") else getattr(held, "device_context", None)
    return None if context is None else context.device


def cuda_spin(cycles: int) -> None:
    """Enqueue a kernel that spins for ``cycles`` GPU clock cycles (``torch.cuda._sleep``)."""
    need(torch.cuda, "_sleep", "holding the CUDA queue while ops are timed")(int(cycles))

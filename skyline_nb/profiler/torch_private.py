"""Every private or semi-private PyTorch API skyline_nb touches, in one place, with guards.

PyTorch does not promise these names; keeping them here means a torch upgrade breaks one file
with a clear message instead of failing deep inside a measurement. Each accessor checks the name
once and raises ``UnsupportedTorchError`` naming the missing API and the torch version.
Tested against torch 2.13 (CPU and CUDA builds); the oldest supported is 2.1.
"""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

MIN_TORCH = (2, 1)


class UnsupportedTorchError(RuntimeError):
    """This torch lacks an internal API the profiler needs."""


def torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def _need(owner: Any, name: str, where: str) -> Any:
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

    return _need(_python_dispatch, "TorchDispatchMode", "torch.utils._python_dispatch")


@contextlib.contextmanager
def outside_modes() -> Iterator[None]:
    """No dispatch mode or ``TorchFunctionMode`` sees what runs inside (the profiler's own
    marker allocations stay out of its trackers' records and the user's modes)."""
    from torch.utils import _python_dispatch

    disable = _need(_python_dispatch, "_disable_current_modes", "torch.utils._python_dispatch")
    with _need(torch._C, "DisableTorchFunction", "torch._C")(), disable():
        yield


# ---- autograd graph -----------------------------------------------------------------------
def current_autograd_node() -> Any | None:
    """The autograd Node whose backward is running on this thread, or None in forward."""
    return _need(torch._C, "_current_autograd_node", "torch._C")()


def sequence_nr(node: Any) -> int:
    """A Node's sequence number: equal for a forward op's grad_fn and its backward run."""
    return int(node._sequence_nr())


def accumulated_variable(node: Any) -> torch.Tensor | None:
    """For an AccumulateGrad node, the leaf tensor (parameter) it accumulates into."""
    return getattr(node, "variable", None)


def is_accumulate_grad(node: Any) -> bool:
    return "AccumulateGrad" in node.name()


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


def storage_nbytes(tensor: torch.Tensor) -> int:
    return int(tensor.untyped_storage().nbytes())


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
    return (int(_need(torch._C, "_len_torch_dispatch_stack", "torch._C")()),
            int(_need(torch._C, "_len_torch_function_stack", "torch._C")()))


def pop_modes_to(depths: tuple[int, int]) -> None:
    """Pop the dispatch and function modes pushed since ``depths = mode_stack_depths()``."""
    while mode_stack_depths()[0] > depths[0]:
        _need(torch._C, "_pop_torch_dispatch_stack", "torch._C")()
    while mode_stack_depths()[1] > depths[1]:
        _need(torch._C, "_pop_torch_function_stack", "torch._C")()


def saved_tensors_hooks_top() -> Any:
    """The innermost ``saved_tensors_hooks`` pair, or None."""
    return _need(torch._C._autograd, "_top_saved_tensors_default_hooks",
                 "torch._C._autograd")(False)


def pop_saved_tensors_hooks_to(top: Any) -> None:
    """Pop the saved-tensor hooks pushed since ``top = saved_tensors_hooks_top()``."""
    pop = _need(torch._C._autograd, "_pop_saved_tensors_default_hooks", "torch._C._autograd")
    while (current := saved_tensors_hooks_top()) is not None and current != top:
        pop()


def flop_formulas() -> dict[Any, Callable[..., int]]:
    """``FlopCounterMode``'s formulas by op packet (called as it calls them)."""
    from torch.utils import flop_counter

    return dict(_need(flop_counter, "flop_registry", "torch.utils.flop_counter"))


def profiler_running() -> bool:
    return bool(_need(torch._C._autograd, "_profiler_enabled", "torch._C._autograd")())


def stop_profiler() -> None:
    """Stop a kineto profiler session, discarding its results."""
    _need(torch._C._autograd, "_disable_profiler", "torch._C._autograd")()


def register_optimizer_step_hooks(
    pre: Callable[..., None], post: Callable[..., None]
) -> list[Any]:
    """Global optimizer step pre/post hooks (public in torch.optim.optimizer, not re-exported)."""
    from torch.optim import optimizer

    return [
        _need(optimizer, "register_optimizer_step_pre_hook", "torch.optim.optimizer")(pre),
        _need(optimizer, "register_optimizer_step_post_hook", "torch.optim.optimizer")(post),
    ]


def register_parameter_registration_hook(hook: Callable[..., Any]) -> Any:
    from torch.nn.modules import module

    return _need(
        module, "register_module_parameter_registration_hook", "torch.nn.modules.module"
    )(hook)


def backend_flags() -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
    """Getter/setter pairs for the global torch flags a user's iteration may flip.

    cudnn.benchmark is the usual one (set inside a model provider, it would leak into the
    user's session); the rest are snapshotted for the same reason.
    """
    backends = torch.backends
    flags: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {}

    def attr(name: str, owner: Any, field: str) -> None:
        if hasattr(owner, field):
            flags[name] = (
                lambda: getattr(owner, field),
                lambda value: setattr(owner, field, value),
            )

    attr("cudnn.enabled", backends.cudnn, "enabled")
    attr("cudnn.benchmark", backends.cudnn, "benchmark")
    attr("cudnn.deterministic", backends.cudnn, "deterministic")
    attr("mkldnn.enabled", backends.mkldnn, "enabled")
    attr(
        "cuda.matmul.allow_fp16_reduced_precision_reduction",
        backends.cuda.matmul,
        "allow_fp16_reduced_precision_reduction",
    )
    precision = _fp32_precision_owners()
    if precision:
        # torch >= 2.9: the legacy allow_tf32 / float32_matmul_precision are views of these, and
        # restoring through them mixes APIs (torch then refuses to read the precision). Parents
        # are set before children because setting a parent cascades.
        flags["fp32_precision"] = (
            lambda: tuple(owner.fp32_precision for owner in precision),
            lambda values: [
                setattr(owner, "fp32_precision", value)
                for owner, value in zip(precision, values, strict=True)
            ],
        )
    else:
        attr("cudnn.allow_tf32", backends.cudnn, "allow_tf32")
        attr("cuda.matmul.allow_tf32", backends.cuda.matmul, "allow_tf32")
        flags["float32_matmul_precision"] = (
            torch.get_float32_matmul_precision,
            torch.set_float32_matmul_precision,
        )
    flags["deterministic_algorithms"] = (
        lambda: (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
        lambda value: torch.use_deterministic_algorithms(value[0], warn_only=value[1]),
    )
    flags["default_dtype"] = (torch.get_default_dtype, torch.set_default_dtype)
    flags["grad_enabled"] = (torch.is_grad_enabled, torch.set_grad_enabled)
    flags["anomaly"] = (
        lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        lambda value: torch.set_anomaly_enabled(value[0], value[1]),
    )
    flags["num_threads"] = (torch.get_num_threads, torch.set_num_threads)
    return flags


def _fp32_precision_owners() -> list[Any]:
    """The objects carrying torch >= 2.9's ``fp32_precision``, parents first."""
    backends = torch.backends
    owners = []
    for path in ("", "cuda.matmul", "cudnn", "cudnn.conv", "cudnn.rnn", "mkldnn",
                 "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn"):
        owner: Any = backends
        for part in filter(None, path.split(".")):
            owner = getattr(owner, part, None)
        if owner is not None and hasattr(owner, "fp32_precision"):
            owners.append(owner)
    return owners


class AllocatorReports:
    """What the CPU allocator reports over a block: (time ns, ±bytes) per allocation and free.

    Kernel-internal scratch (oneDNN convolution workspaces, ...) is allocated below the
    dispatcher, so a dispatch-mode tracker cannot see it; the allocator reports it to the
    kineto profiler (``profile_memory``). Ops are not recorded (only user scopes are observed,
    and there are none), so stopping the profiler and reading its events cost about a third of
    what ``torch.profiler.profile`` costs for the same memory events. Raises RuntimeError on
    entry when a profiler already runs (torch allows one).
    """

    def __init__(self) -> None:
        self.events: list[tuple[int, int]] = []

    def __enter__(self) -> AllocatorReports:
        from torch._C import _autograd as autograd_c
        from torch._C import _profiler as profiler_c

        config = profiler_c.ProfilerConfig(
            profiler_c.ProfilerState.KINETO, False, True, False, False, False,
            profiler_c._ExperimentalConfig())
        activities = {profiler_c.ProfilerActivity.CPU}
        if profiler_running():
            raise RuntimeError("a profiler is already running")
        _need(autograd_c, "_prepare_profiler", "torch._C._autograd")(config, activities)
        _need(autograd_c, "_enable_profiler", "torch._C._autograd")(
            config, activities, {profiler_c.RecordScope.USER_SCOPE})
        return self

    def __exit__(self, *exc: object) -> None:
        from torch._C import _autograd as autograd_c

        results = _need(autograd_c, "_disable_profiler", "torch._C._autograd")()
        cpu = _need(autograd_c, "DeviceType", "torch._C._autograd").CPU
        # the enum compared as is: its str() took 40 % of reading a transformer step's ~2,400
        # reports (10.5 → 5.9 ms), and a profile reads five to ten such windows
        self.events = sorted(
            (event.start_ns(), event.nbytes())
            for event in results.events()
            if event.device_type() == cpu and event.name() == "[memory]"
        )

    def peak(self, after_bytes: int = 0, labels: Mapping[int, str] | None = None) -> int:
        """Max running sum of the reports, in time order (the largest of ``peaks``)."""
        return max(self.peaks(after_bytes, labels).values())

    def peaks(self, after_bytes: int = 0, labels: Mapping[int, str] | None = None,
              first: str = "") -> dict[str, int]:
        """Max running sum of the reports, in time order, for each part of the block.

        Frees of blocks allocated before the block started are not reported by torch, so the
        sum starts at zero at the start. ``after_bytes``: only the part after the last
        allocation of exactly that many bytes counts (a marker between iterations), the sum
        then starting at zero there. ``labels`` ({marker bytes: part}): an allocation of one
        of those sizes starts the part it names (the part before the first is ``first``); the
        markers' own bytes count nowhere.
        """
        events = self.events
        if after_bytes:
            marks = [i for i, (_t, nbytes) in enumerate(events) if nbytes == after_bytes]
            if not marks:
                raise RuntimeError("the allocator reported no marker allocation")
            events = [e for e in events[marks[-1] + 1:] if e[1] != -after_bytes]
        labels = labels or {}
        part, live = first, 0
        found = {first: 0}
        for _start, nbytes in events:
            if abs(nbytes) in labels:
                if nbytes > 0:
                    part = labels[nbytes]
                    found[part] = max(found.get(part, live), live)
                continue
            live += nbytes
            found[part] = max(found[part], live)
        return found


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Silence file descriptor 2 for a moment (torch 2.13's kineto logs ``USDT: … profiler_start``
    from C++ at every profiler start/stop; ipykernel would show those lines in the notebook).

    Only wraps the profiler's own start/stop calls, never the user's code.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def cuda_spin(cycles: int) -> None:
    """Enqueue a kernel that spins for ``cycles`` GPU clock cycles (``torch.cuda._sleep``)."""
    _need(torch.cuda, "_sleep", "holding the CUDA queue while ops are timed")(int(cycles))

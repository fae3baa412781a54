"""Measurements leave no trace in the user's session, even when interrupted.

Saved on entry and put back on exit, whether the measurement returns or raises
(KeyboardInterrupt too): the RNG states (torch CPU and CUDA, Python ``random``, NumPy), grad,
forward-AD and anomaly modes, autocast, torch's thread count, default device and global
settings (``global_flags``); whatever the measurement added and an interrupt kept it from
removing is removed: global module and optimizer hooks, dispatch and function modes,
saved-tensor hooks, a running profiler session.
Called under ``torch.inference_mode()``, the measurements run outside it. Memory is
released. Models are always fresh from the provider (``providers.build_trial`` copies one the
user holds), so training them cannot touch the user's objects.

An interrupt that lands while the state is being put back (Ctrl+C pressed twice, or late) is
held until the state is whole, then raised: the restore runs with SIGINT deferred, and is
repeated if an interrupt got in before the deferral did.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.global_flags import global_flags
from skyline_nb.profiler.interrupts import interrupts_held


@dataclass
class _Saved:
    """The user's session state that a measurement may change."""

    torch_rng: torch.Tensor
    cuda_rng: dict[int, torch.Tensor]
    python_rng: Any
    numpy_rng: Any
    grad: bool
    fwd_grad: bool
    anomaly: tuple[bool, bool]
    autocast: dict[str, tuple[bool, torch.dtype]]
    threads: int
    flags: dict[str, Any]
    default_device: torch.device | None
    hooks: dict[str, list[Any]]
    modes: tuple[int, int]
    saved_tensors_hooks: Any
    profiler: bool


def _save(device: Device) -> _Saved:
    cuda = [device.torch_device.index or 0] if device.kind == "cuda" else []
    return _Saved(
        torch_rng=torch.random.get_rng_state(),
        cuda_rng={i: torch.cuda.get_rng_state(i) for i in cuda},
        python_rng=random.getstate(),
        numpy_rng=_numpy_state(),
        grad=torch.is_grad_enabled(),
        fwd_grad=tp.fwd_grad_enabled(),
        anomaly=(torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        autocast={kind: (torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind))
                  for kind in ("cpu", *(["cuda"] if cuda else []))},
        threads=torch.get_num_threads(),
        flags={name: get() for name, (get, _set) in global_flags().items()},
        default_device=tp.default_device_set(),
        hooks=tp.global_hook_keys(),
        modes=tp.mode_stack_depths(),
        saved_tensors_hooks=tp.saved_tensors_hooks_top(),
        profiler=tp.profiler_running(),
    )


def _restore(saved: _Saved, device: Device) -> None:
    """Put ``saved`` back; safe to repeat."""
    if tp.profiler_running() and not saved.profiler:
        tp.stop_profiler()
    tp.pop_saved_tensors_hooks_to(saved.saved_tensors_hooks)
    if tp.default_device_set() != saved.default_device:
        # first: its context mode sits under the measurement's modes and takes itself off
        # (popping the modes first left it set with its mode gone)
        torch.set_default_device(saved.default_device)
    tp.pop_modes_to(saved.modes)
    tp.remove_global_hooks_since(saved.hooks)
    for name, (get, set_) in global_flags().items():
        if name in saved.flags and get() != saved.flags[name]:
            set_(saved.flags[name])
    if torch.get_num_threads() != saved.threads:
        torch.set_num_threads(saved.threads)
    torch.set_anomaly_enabled(*saved.anomaly)
    torch.set_grad_enabled(saved.grad)
    tp.set_fwd_grad_enabled(saved.fwd_grad)
    for kind, (enabled, dtype) in saved.autocast.items():  # a step that left autocast on
        torch.set_autocast_enabled(kind, enabled)
        torch.set_autocast_dtype(kind, dtype)
    torch.random.set_rng_state(saved.torch_rng)
    for index, state in saved.cuda_rng.items():
        torch.cuda.set_rng_state(state, index)
    random.setstate(saved.python_rng)
    if saved.numpy_rng is not None:
        import numpy

        numpy.random.set_state(saved.numpy_rng)
    device.free_memory()


@contextmanager
def isolated(device: Device) -> Iterator[None]:
    """Run measurements without leaving a trace in the user's session."""
    saved = _save(device)
    try:
        torch.set_grad_enabled(True)
        # called inside ``torch.inference_mode()`` every step raised "element 0 of tensors does
        # not require grad", which blamed the user's step
        with torch.inference_mode(False):
            yield
    finally:
        _restore_whole(lambda: _restore(saved, device))


def _restore_whole(restore: Callable[[], None]) -> None:
    interrupted = False
    while True:
        try:
            with interrupts_held() as held:
                restore()
            interrupted = interrupted or bool(held)
            break
        except KeyboardInterrupt:
            interrupted = True  # it came before the deferral did: the restore runs again
    if interrupted:
        raise KeyboardInterrupt


def _numpy_state() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy.random.get_state()

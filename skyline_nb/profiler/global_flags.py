"""The global torch settings a user's providers or step may flip, as getter/setter pairs:
``isolation`` snapshots them before a measurement and puts back whatever changed.

A provider that sets ``torch.set_flush_denormal(True)``, turns a fused attention kernel off,
raises ``set_warn_always`` or trims the print options changes the user's whole session, not
only the profile's trial (they all stayed changed after a profile before session 40).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from skyline_nb.profiler import torch_private as tp

Flags = dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]


def global_flags() -> Flags:
    """Getter/setter pairs for the global torch settings a user's providers or step may flip.

    cudnn.benchmark is the usual one (set inside a model provider, it would leak into the
    user's session); the rest are snapshotted for the same reason. The default device is not
    among them: its context sits under every function mode, ``isolation`` puts it back
    before it takes the measurement's modes off (``torch_private.default_device_set``).
    """
    backends = torch.backends
    flags: Flags = {}

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
    attr("mkldnn.deterministic", backends.mkldnn, "deterministic")
    attr(
        "cuda.matmul.allow_fp16_reduced_precision_reduction",
        backends.cuda.matmul,
        "allow_fp16_reduced_precision_reduction",
    )
    precision = _fp32_precision_owners()
    if precision:
        # torch >= 2.9: the legacy allow_tf32 / float32_matmul_precision are views of these, and
        # restoring through them mixes APIs (torch then refuses to read the precision). Parents
        # are set before children because setting a parent cascades. The legacy precision keeps
        # a value of its own, put back first: after a provider's
        # ``set_float32_matmul_precision("high")`` it still read "high", and reading
        # ``allow_tf32`` raised (a mix of the two APIs); then the new one's, which that sets.
        def set_precision(values: tuple[str, tuple[str, ...]]) -> None:
            if torch.get_float32_matmul_precision() != values[0]:
                torch.set_float32_matmul_precision(values[0])
            for owner, value in zip(precision, values[1], strict=True):
                owner.fp32_precision = value

        flags["fp32_precision"] = (
            lambda: (torch.get_float32_matmul_precision(),
                     tuple(owner.fp32_precision for owner in precision)),
            set_precision,
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
    flags["warn_always"] = (torch.is_warn_always_enabled, torch.set_warn_always)
    flags["flush_denormal"] = (flushes_denormals, torch.set_flush_denormal)
    if tp.print_options() is not None:
        flags["print_options"] = (tp.print_options,
                                  lambda value: torch.set_printoptions(**value))
    for kind in ("flash", "mem_efficient", "math", "cudnn"):  # scaled_dot_product_attention's
        _attr_call(flags, f"{kind}_sdp", backends.cuda, f"{kind}_sdp_enabled",
                  f"enable_{kind}_sdp")
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


def _attr_call(flags: Flags, name: str, owner: Any, getter: str, setter: str) -> None:
    """A setting read and written by two functions of ``owner``, where this torch has both."""
    get, set_ = getattr(owner, getter, None), getattr(owner, setter, None)
    if callable(get) and callable(set_):
        flags[name] = (get, set_)


def flushes_denormals() -> bool:
    """Whether this thread flushes subnormal floats to zero (``torch.set_flush_denormal``, which
    has no getter: it sets the thread's FTZ/DAZ bits, which Python's own float arithmetic obeys
    too, so half the smallest normal double reads 0 then). No tensor op: a dispatch mode of the
    user's or an interrupted measurement's would see it."""
    return sys.float_info.min / 2 == 0.0


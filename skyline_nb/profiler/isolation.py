"""Measurements leave no trace in the user's session.

RNG forked (CPU + CUDA, Python ``random``, NumPy), grad mode and global torch flags restored,
and memory released, whether the measurement returns or raises (KeyboardInterrupt too). Models
are always fresh from the provider (``providers.build_trial`` copies one the user holds), so
training them cannot touch the user's objects.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.device import Device


@contextmanager
def isolated(device: Device) -> Iterator[None]:
    """Run measurements without leaving a trace in the user's session."""
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

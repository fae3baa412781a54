"""Exceptions the profiler raises for the user's mistakes and for resources that ran out.

Each message names the provider and where the user defined it (cell id and line, or file and
line), because the user must fix their code, not ours. The magic shows these messages as is.
"""

from __future__ import annotations


class ProfilerError(Exception):
    """Base of everything skyline_nb raises on purpose while profiling."""


class ProviderError(ProfilerError):
    """A provider is missing, has the wrong shape, returned the wrong thing, or raised."""


class ProviderSignatureError(ProviderError, TypeError):
    """A provider is not callable or cannot be called the way Skyline calls it."""


class InputTypeError(ProviderError, TypeError):
    """The input provider returned something other than tensors (alone, or in a tuple/list/dict)."""


class StartingBatchOOMError(ProfilerError, MemoryError):
    """The iteration does not fit the device at the batch size the user asked for."""

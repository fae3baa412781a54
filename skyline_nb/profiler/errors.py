"""Exceptions the profiler raises for the user's mistakes and for resources that ran out.

Each message names the provider and where the user defined it (cell id and line, or file and
line), because the user must fix their code, not ours. The magic shows these messages as is.
"""

from __future__ import annotations

from skyline_nb.export.units import format_bytes


class ProfilerError(Exception):
    """Base of everything skyline_nb raises on purpose while profiling."""


class ProviderError(ProfilerError):
    """A provider is missing, has the wrong shape, returned the wrong thing, or raised."""


class ProviderSignatureError(ProviderError, TypeError):
    """A provider is not callable or cannot be called the way Skyline calls it."""


class InputTypeError(ProviderError, TypeError):
    """The input provider returned something other than tensors (alone, or in a tuple/list/dict)."""


class ResourceError(ProfilerError):
    """Memory ran out: no mistake in the user's code, though it ran in it. The message says what
    does not fit and what to try; the notebook shows it without the user's frames (``failures``),
    which would be torch's allocator and autograd frames under the line that ran out."""


class StartingBatchOOMError(ResourceError, MemoryError):
    """The iteration does not fit the device at the batch size the user asked for."""


class ModelOOMError(ResourceError):
    """The model alone does not fit the device (or the CPU ``memory_budget``): no batch size can.

    Not a ``MemoryError``, which the device counts as "this batch does not fit"
    (``Device.oom_types``): what backs off to a smaller batch on those must not for this, and
    ``profile`` must not reword it as the starting batch not fitting ("try a smaller batch
    size", which cannot help)."""


def in_bytes(count: int) -> str:
    """A size for a message about a budget the user typed ("4MiB"): in their units, and exact
    (budgets are compared to the byte): '4 MiB (4,194,304 bytes)'."""
    return f"{format_bytes(count)} ({count:,} bytes)"

"""The host allocator is put in its steady state before anything is measured.

glibc's malloc serves a block at or above its mmap threshold (128 KiB when a process starts)
with a fresh ``mmap`` and unmaps it on free, so the next iteration faults the same memory in
again (a page fault costs ~1–3 µs here). Each such block freed raises the threshold to its size,
up to 32 MiB, and the heap's trim threshold to twice that. A process that has freed a block as
large as an iteration's has stopped faulting; one that has not faults every iteration, so a
batch size's time depends on the sizes the process ran before. Measured (example CNN, default
threads, this 2-core machine; BENCHMARKS.md "Allocator state"): batch 32 in a fresh process
4,000 faults and 58 ms an iteration, 0 faults and 33–38 ms once a larger block was freed; batch
64 18,000 faults and 132 ms against 0 and 67–95 ms. The profile's own samples (up to 4× the
batch) moved the threshold part of the way, so the sizes the sampler chose decided the state
the user's training loop later ran in, and the samples and the plain loop they predict were
measured in different states.

``settle()`` frees one block just under the 32 MiB cap: the state any process reaches by itself
once it frees a tensor that large, and now the one the user's loop runs in after ``%skyline``,
whatever it sampled (a process whose blocks all stay small would otherwise keep a lower
threshold, and keep faulting the blocks above it). Blocks above 32 MiB are mmapped in every
state, and a heap top freed beyond the trim threshold (64 MiB once settled) is still given
back (the CNN at 128–256: 5,000–47,000 faults an iteration in either state): those faults are
part of every iteration at that size and are measured as such.
Nothing else changes (no ``mallopt``, which would switch glibc's adaptation off for good).
"""

from __future__ import annotations

import ctypes
import functools
import platform

# glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems: the largest block whose free raises
# the threshold. The block asked for stays below it with room for the chunk header and the
# page rounding of an mmapped chunk.
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
_BLOCK = MMAP_THRESHOLD_MAX - 2 * 4096


@functools.cache
def glibc() -> ctypes.CDLL | None:
    """This process's C library with ``malloc``/``free`` typed, if it is glibc (looked up once:
    ``platform.libc_ver`` reads the interpreter's binary)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free.restype = None
    return libc


def settle() -> bool:
    """Raise glibc's mmap threshold to its cap by freeing one mmapped block just under it.

    Returns whether it ran (glibc only; other C libraries are left alone). The block is never
    touched, so it costs one ``mmap`` and one ``munmap``, no page faults.
    """
    libc = glibc()
    if libc is None:
        return False
    block = libc.malloc(_BLOCK)
    if not block:
        return False
    libc.free(block)
    return True

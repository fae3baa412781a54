"""The host allocator is settled before measuring: an iteration-sized block comes from the heap,
not from a fresh mmap that every iteration faults in again.

Each case runs in a fresh interpreter, since the allocator's state is the process's history.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skyline_nb.profiler import allocator

ROOT = Path(__file__).resolve().parents[2]

# A fresh interpreter: glibc's counters of mmapped memory (mallinfo2) around a 4 MiB tensor
# that stays alive. A settled allocator serves it from the heap (the mmapped total does not
# move); a fresh one mmaps it (and would unmap it on free, so a training loop faults it in again
# every iteration: BENCHMARKS.md "Allocator state", `benchmarks/allocator.py`, where a fresh
# process faults 1,800-8,100 pages an iteration of the example CNN at 16-64 and a settled one
# none). Page-fault counts themselves are no test: the host reclaims pages on its own (a CI run
# saw 2,000-16,000 faults in some iterations of a settled process).
CHILD = """
import ctypes, json, sys
sys.path.insert(0, {root!r})
import torch
from skyline_nb.profiler import allocator

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
settled = allocator.settle() if sys.argv[1] == "settle" else False
before = libc.mallinfo2().hblkhd
block = torch.empty(1 << 20, dtype=torch.float32)
print(json.dumps({{"settled": settled, "mmapped": libc.mallinfo2().hblkhd - before}}))
"""
MIB = 1 << 20


def _mmapped(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), mode],
                         capture_output=True, text=True, timeout=240, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


glibc_only = pytest.mark.skipif(allocator.glibc() is None,
                                reason="the settled state is glibc malloc's")


@glibc_only
def test_a_settled_process_serves_an_iteration_sized_block_from_its_heap() -> None:
    settled, fresh = _mmapped("settle"), _mmapped("fresh")
    assert settled == {"settled": True, "mmapped": 0}, settled
    assert fresh["settled"] is False and fresh["mmapped"] >= 4 * MIB, (
        f"a fresh process no longer mmaps a 4 MiB block: this glibc adapts otherwise and the "
        f"check proves nothing ({fresh})")


@glibc_only
def test_settle_is_idempotent_and_cheap() -> None:
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    assert allocator.settle() is True
    assert allocator.settle() is True
    # The block is never touched: a few pages (the chunk's header), not its 8,190.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 16

"""How long this process's threads waited for a CPU: the sign that other work shared the cores.

A timed block is worth its number only when the process had the cores it asked for. Linux
counts, per thread, the time it was runnable but waiting on a run queue (the second field of
``/proc/self/task/<tid>/schedstat``, in ns). Summed over the threads across a block, it stays a
tiny share of a block the process ran alone and a large share of one another process stretched,
so a timed block (``timing.py``) or instrumented run (``session.py``) whose threads waited more
than ``timing.QUIET_WAIT`` of it is set aside instead of being averaged in. The evidence:
``python benchmarks/load.py --blocks``, in BENCHMARKS.md ("Load").

Where the counter does not exist (macOS, Windows, a kernel without schedstats) ``waited_ns``
returns None and every block counts, as it would without this module.

Example usage::

    before = waited_ns()
    run_block()
    after = waited_ns()
    fraction = wait_fraction(before, after, block_ms)
"""

from __future__ import annotations

import os

_TASKS = "/proc/self/task"


def waited_ns() -> int | None:
    """Total ns this process's live threads have spent waiting for a CPU, or None if unknown.

    Threads that ended since the last call drop out of the sum (a pool shrinking mid-block
    makes the difference smaller, never a false alarm).
    """
    try:
        threads = os.listdir(_TASKS)
    except OSError:
        return None
    total, read = 0, False
    for tid in threads:
        try:
            total += int(_read(f"{_TASKS}/{tid}/schedstat").split()[1])
            read = True
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile, or this kernel keeps no schedstats
    return total if read else None


def _read(path: str) -> bytes:
    """A small /proc file's bytes through the bare file descriptor: ``open()``'s buffered file
    object took 40 % of each read, and the counter is read around every timed chunk, for every
    thread (a GPU host's 19 threads: 240 reads, 45 ms of a 0.57 s profile; BENCHMARKS.md)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 256)
    finally:
        os.close(fd)


def wait_fraction(before: int | None, after: int | None, block_ms: float) -> float:
    """Waiting over the block's wall time (summed over threads, so it can exceed 1); 0 if
    unknown."""
    if before is None or after is None or block_ms <= 0:
        return 0.0
    return max(0, after - before) / 1e6 / block_ms

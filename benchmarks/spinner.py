"""One competing busy process for the load benchmarks, in this session or a session of its own.

Where it runs matters on Linux with autogroups (``/proc/sys/kernel/sched_autogroup_enabled``):
the scheduler shares the cores between sessions before threads, so a process of another
session (another terminal's, another notebook kernel's) leaves this one a core for all its
threads, while one of this session competes thread by thread (BENCHMARKS.md, session 24).
A Jupyter kernel is a session of its own, so ``apart`` is what a notebook beside any other busy
program meets. The spinner ends by itself after ``SECONDS`` even if the benchmark is killed.

    with spinning(apart=True):
        run_the_benchmark()
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

SECONDS = 3600
CODE = f"import time\nend = time.time() + {SECONDS}\nwhile time.time() < end: pass"


@contextlib.contextmanager
def spinning(apart: bool) -> Iterator[subprocess.Popen]:
    """A process spinning on a core until the block ends, in a session of its own if
    ``apart``; it has started spinning when the block begins."""
    competitor = subprocess.Popen([sys.executable, "-c", CODE], start_new_session=apart)
    time.sleep(0.5)
    try:
        yield competitor
    finally:
        competitor.kill()
        competitor.wait()


def described(apart: bool) -> str:
    """How a table's header names the load."""
    return f"one spinning process {'in its own session' if apart else 'in this session'}"

"""How many CPUs this process may use, and a note when torch runs more threads than that.

Torch sizes its thread pool from the cores it sees, and a container's CPU limit (Docker's
``--cpus``, a Kubernetes pod's CPU limit, where many hosted notebooks run) is a CFS quota that
hides no core: on a 64-core node a pod limited to 2 CPUs runs 32 torch threads. Each parallel
op then waits for threads that take turns on too few CPUs. On the 2-core development machine
(BENCHMARKS.md, session 47) the example CNN at batch 16 took 16.6 ms a step at 2 threads,
40.0 at 4 and 100.0 at 8 (a second run: 20.0, 44.0, 112.0); the LSTM 11.0, 24.0 and 206.9
(17.8, 27.1, 217.1). A CPU affinity (``taskset``, a cpuset) does the same where torch's count
was set by hand or by ``OMP_NUM_THREADS``. Nothing in the profile's numbers says why a step is
that slow, so the report says it first.

The quota comes from ``cgroup.py``; whole CPUs round down: a thread more than the quota
serves gets the whole group throttled.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import NamedTuple

from skyline_nb.profiler import cgroup
from skyline_nb.profiler.cgroup import CGROUP, OWN


class UsableCpus(NamedTuple):
    """How many CPUs the process may use, what decides it (in words), and whether that is a
    quota (which stalls the whole process once it is spent, until the next period)."""

    count: int
    why: str
    quota: bool = False


def usable_cpus(root: Path = CGROUP, own: Path = OWN) -> UsableCpus:
    """The CPUs this process may use: its affinity, capped by its cgroup's quota."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        affinity = os.cpu_count() or 1
    quota = cgroup.cpu_quota(root, own)
    if quota is not None and max(1, math.floor(quota)) < affinity:
        return UsableCpus(max(1, math.floor(quota)),
                          f"its container's CPU quota of {quota:g} CPU{'' if quota == 1 else 's'}",
                          quota=True)
    seen = os.cpu_count() or affinity
    if affinity < seen:
        return UsableCpus(affinity, f"its CPU affinity: {affinity} of this machine's {seen}")
    return UsableCpus(affinity, "all this machine has")


def oversubscribed_note(threads: int, cpus: UsableCpus) -> str | None:
    """What the report says first when torch runs more threads than the process has CPUs."""
    if threads <= cpus.count:
        return None
    stalls = (
        "; and once they spend the quota, the process waits for the next period, so the times "
        "here, of the steps between those waits, are below a loop's mean (a 1-CPU quota at 2 "
        "threads: 16.0 ms profiled, a loop's median 28.2 and mean 46.4)") if cpus.quota else ""
    return (
        f"torch runs {threads} threads, and this process may use {cpus.count} CPU"
        f"{'s' if cpus.count > 1 else ''} ({cpus.why}): each op's threads take turns on them "
        "and wait for one another, so the step is slower than with fewer threads (on 2 CPUs, "
        f"8 threads made a CNN's step up to 6× slower and an LSTM's up to 19×){stalls}. Call "
        f"torch.set_num_threads({cpus.count}) before your training loop, and profile again"
    )

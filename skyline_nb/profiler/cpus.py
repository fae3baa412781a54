"""How many CPUs this process may use, and a note when torch runs more threads than that.

Torch sizes its thread pool from the cores it sees, and a container's CPU limit (Docker's
``--cpus``, a Kubernetes pod's CPU limit, where many hosted notebooks run) is a CFS quota that
hides no core: on a 64-core node a pod limited to 2 CPUs runs 32 torch threads. Each parallel
op then waits for threads that take turns on too few CPUs. On the 2-core development machine
(BENCHMARKS.md, session 47) the example CNN at batch 16 took 16.6 ms a step at 2 threads,
40.0 at 4 and 100.0 at 8; the LSTM 11.0, 24.0 and 206.9. A CPU affinity (``taskset``, a
cpuset) does the same where torch's count was set by hand or by ``OMP_NUM_THREADS``. Nothing in
the profile's numbers says why a step is that slow, so the report says it first.

The quota is read as other runtimes read it: cgroup v2 ``cpu.max`` ("quota period", or "max"),
cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1: none), along the process's own
cgroup path from ``/proc/self/cgroup`` and at the mount's root (a container sees its own
cgroup there), the smallest that binds. Whole CPUs round down: a thread more than the quota
serves gets the whole group throttled.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

CGROUP = Path("/sys/fs/cgroup")
OWN = Path("/proc/self/cgroup")
V1_CONTROLLERS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")


class UsableCpus(NamedTuple):
    """How many CPUs the process may use, and what decides it, in words."""

    count: int
    why: str


def cpu_quota(root: Path = CGROUP, own: Path = OWN) -> float | None:
    """The CPUs a cgroup quota allows this process (module doc), or None where none binds or
    none can be read."""
    quotas = [quota for path in _quota_files(root, _own_paths(own))
              if (quota := _read_quota(path)) is not None]
    return min(quotas) if quotas else None


def usable_cpus(root: Path = CGROUP, own: Path = OWN) -> UsableCpus:
    """The CPUs this process may use: its affinity, capped by its cgroup's quota."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        affinity = os.cpu_count() or 1
    quota = cpu_quota(root, own)
    if quota is not None and max(1, math.floor(quota)) < affinity:
        return UsableCpus(max(1, math.floor(quota)),
                          f"its container's CPU quota of {quota:g} CPUs")
    seen = os.cpu_count() or affinity
    if affinity < seen:
        return UsableCpus(affinity, f"its CPU affinity: {affinity} of this machine's {seen}")
    return UsableCpus(affinity, "all this machine has")


def oversubscribed_note(threads: int, cpus: UsableCpus) -> str | None:
    """What the report says first when torch runs more threads than the process has CPUs."""
    if threads <= cpus.count:
        return None
    return (
        f"torch runs {threads} threads, and this process may use {cpus.count} CPU"
        f"{'s' if cpus.count > 1 else ''} ({cpus.why}): each op's threads take turns on them "
        "and wait for one another, so the step is slower than with fewer threads (on 2 CPUs, "
        "8 threads made a CNN's step 6× slower and an LSTM's 19×). Call "
        f"torch.set_num_threads({cpus.count}) before your training loop, and profile again"
    )


def _own_paths(own: Path) -> dict[str, str]:
    """The process's cgroup path per hierarchy: "" for v2, a v1 controller list's name."""
    paths: dict[str, str] = {}
    try:
        lines = own.read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        paths[controllers] = path
    return paths


def _quota_files(root: Path, paths: dict[str, str]) -> Iterator[Path]:
    """``cpu.max`` (v2) and ``cpu.cfs_quota_us`` (v1) files at the process's cgroup, its
    ancestors and the mount's root."""
    v1 = next((paths[c] for c in V1_CONTROLLERS if c in paths), "/")
    for base, path, name in ((root, paths.get("", "/"), "cpu.max"),
                             *((root / c, v1, "cpu.cfs_quota_us") for c in V1_CONTROLLERS)):
        place = base / path.strip("/")
        for folder in (place, *place.parents):
            if folder == base.parent:
                break
            yield folder / name


def _read_quota(path: Path) -> float | None:
    """One file's quota in CPUs, or None (no limit, no such file, or unreadable)."""
    try:
        text = path.read_text().split()
        if path.name == "cpu.max":
            quota, period = text[0], text[1]
        else:
            quota = text[0]
            period = (path.parent / "cpu.cfs_period_us").read_text().split()[0]
        if quota in ("max", "-1") or float(period) <= 0:
            return None
        return float(quota) / float(period)
    except (OSError, IndexError, ValueError):
        return None

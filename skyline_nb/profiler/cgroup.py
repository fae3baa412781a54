"""The limits a container puts on this process: its CPU quota and its memory limit.

Many hosted notebooks run in containers (a Kubernetes pod's limits, Docker's ``--cpus`` and
``--memory``), and neither limit shows where a program usually looks: every core of the node
stays visible (torch sizes its thread pool from them, ``cpus.py``), and ``/proc/meminfo``'s
MemAvailable is the node's. A sample at 4× the user's batch that fits the node's free RAM but
not the pod's limit gets the kernel process killed, with the notebook's state (``device.py``).

The limits are read as other runtimes read them: cgroup v2 (``cpu.max``: "quota period" or
"max"; ``memory.max`` and ``memory.current``) and cgroup v1 (``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``, -1: none; ``memory.limit_in_bytes`` and ``memory.usage_in_bytes``, a
limit near 2⁶³: none), at the process's own cgroup from ``/proc/self/cgroup``, its ancestors
(a limit on a parent binds too) and the mount's root (a container sees its own cgroup there);
the smallest that binds. A file that is missing or unreadable binds nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
OWN = Path("/proc/self/cgroup")
CPU_V1 = ("cpu", "cpu,cpuacct", "cpuacct,cpu")
MEMORY_V1 = ("memory",)
UNLIMITED_V1 = 1 << 60  # v1 says "no limit" with the largest page-aligned int64


def cpu_quota(root: Path = CGROUP, own: Path = OWN) -> float | None:
    """The CPUs a quota allows this process, or None where none binds."""
    quotas = [quota for folder, v2 in _folders(root, own, CPU_V1)
              if (quota := _cpu(folder, v2)) is not None]
    return min(quotas) if quotas else None


def memory_headroom(root: Path = CGROUP, own: Path = OWN) -> int | None:
    """The bytes this process's cgroup may still take before its limit (page cache the kernel
    reclaims first, ``inactive_file``, counts as free), or None where no limit binds."""
    rooms = [room for folder, v2 in _folders(root, own, MEMORY_V1)
             if (room := _memory(folder, v2)) is not None]
    return max(0, min(rooms)) if rooms else None


def _folders(root: Path, own: Path, v1_names: tuple[str, ...]) -> Iterator[tuple[Path, bool]]:
    """Each folder of the process's cgroup and its ancestors up to the mount's root, for
    cgroup v2 and for the v1 controller ``v1_names`` name, with whether it is v2's."""
    paths = _own_paths(own)
    v1 = next((paths[name] for name in v1_names if name in paths), "/")
    for base, path, v2 in ((root, paths.get("", "/"), True),
                           *((root / name, v1, False) for name in v1_names)):
        place = base / path.strip("/")
        for folder in (place, *place.parents):
            if folder == base.parent:
                break
            yield folder, v2


def _own_paths(own: Path) -> dict[str, str]:
    """The process's cgroup path per hierarchy: "" for v2, a v1 controller list's name."""
    try:
        lines = own.read_text().splitlines()
    except OSError:
        return {}
    paths: dict[str, str] = {}
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        paths[controllers] = path
    return paths


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _cpu(folder: Path, v2: bool) -> float | None:
    """One folder's quota in CPUs, or None."""
    if v2:
        quota, period = [*_words(folder / "cpu.max"), "max", "0"][:2]
    else:
        quota = (_words(folder / "cpu.cfs_quota_us") or ["-1"])[0]
        period = (_words(folder / "cpu.cfs_period_us") or ["0"])[0]
    try:
        share = float(quota) / float(period)
    except (ValueError, ZeroDivisionError):  # "max", none, or unreadable
        return None
    return share if share > 0 else None


def _memory(folder: Path, v2: bool) -> int | None:
    """One folder's limit less its usage (its reclaimable page cache free), or None."""
    names = ("memory.max", "memory.current") if v2 else (
        "memory.limit_in_bytes", "memory.usage_in_bytes")
    limit, used = (_words(folder / name)[:1] for name in names)
    if not limit or not used or not limit[0].isdigit() or not used[0].isdigit():
        return None  # "max", missing or unreadable
    if not v2 and int(limit[0]) >= UNLIMITED_V1:
        return None
    stat = _words(folder / "memory.stat")
    key = "inactive_file" if v2 else "total_inactive_file"
    cache = next((int(stat[k + 1]) for k in range(0, len(stat) - 1, 2)
                  if stat[k] == key and stat[k + 1].isdigit()), 0)
    return int(limit[0]) - int(used[0]) + cache

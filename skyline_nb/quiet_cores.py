"""Waiting, before the widget's kernel side times anything, for the front end to stop drawing.

When ``%skyline`` runs (or Re-profile, or Measure at N), the notebook's browser and server draw
the new widget and its progress panel on the cores the kernel is about to time iterations on.
Measured in JupyterLab on 2 cores with a GPT-2 profile (BENCHMARKS.md, session 20): the
kernel's threads waited for a CPU through most of the first ~100 ms after the widget appeared
and now and then until ~450 ms; the headline's iterations, ~150 ms in, waited in 4 of 5
profiles ("4 of 8 timed steps waited for a busy CPU") and in none of 5 where the widget drew
no progress.

So the kernel sleeps first, until the machine's CPUs were busy less than ``QUIET_SHARE`` of
each of ``QUIET_WINDOWS`` windows of ``WINDOW_S`` running (the kernel itself asleep, that is
everyone else's work; one quiet window was not enough: the browser resumed drawing after it,
BENCHMARKS.md), at most ``MAX_WAIT_S``: a machine that stays busy (another process
computing) is the one the user's loop runs on, and the profile's own rules handle it
(``timing.py``). The counter is Linux's ``/proc/stat``; elsewhere the kernel sleeps
``FALLBACK_S``, the measured tail.
"""

from __future__ import annotations

import time

WINDOW_S = 0.05
QUIET_WINDOWS = 2
QUIET_SHARE = 0.10
MAX_WAIT_S = 0.3
FALLBACK_S = 0.25
_STAT = "/proc/stat"


def cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot, or None where unknown."""
    try:
        with open(_STAT, "rb") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    idle = fields[3] + fields[4]  # idle, iowait
    total = sum(fields[:8])  # guest time is already in user time
    return total - idle, total


def in_kernel() -> bool:
    """Whether this runs in an IPython kernel, whose front end shows the widget."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def wait_for_front_end() -> None:
    """In a kernel, wait for the front end to stop drawing what the widget just showed
    (``wait_for_quiet_cores``); in a terminal nothing draws."""
    if in_kernel():
        wait_for_quiet_cores()


def wait_for_quiet_cores(max_wait_s: float = MAX_WAIT_S) -> float:
    """Sleep until ``QUIET_WINDOWS`` windows of ``WINDOW_S`` running in which the CPUs were
    busy less than ``QUIET_SHARE`` of the time, at most ``max_wait_s`` (at least one window);
    returns the seconds slept."""
    started = time.perf_counter()
    before = cpu_jiffies()
    if before is None:
        time.sleep(min(FALLBACK_S, max_wait_s))
        return time.perf_counter() - started
    quiet = 0
    while quiet < QUIET_WINDOWS and time.perf_counter() - started < max_wait_s:
        time.sleep(WINDOW_S)
        after = cpu_jiffies()
        if after is None:
            break
        busy, total = after[0] - before[0], after[1] - before[1]
        quiet = quiet + 1 if total > 0 and busy < QUIET_SHARE * total else 0
        before = after
    return time.perf_counter() - started

"""What each of a profile's timings saw, recorded in the kernel: ``notebook_drag.py --probe``.

``install()`` wraps the profiler's ``time_steps`` (the headline, then each sample and each one
timed again, in order) and records, per call: when it started (s), its wall ms, iterations,
median ms, iterations that waited for a CPU, the kernel's CPU ms (both torch threads busy:
about twice the wall) and the ms its threads waited in the run queue (``cpuwait.waited_ns``,
the counter the profiler's own timings read). ``take()`` returns the records since the last
call. It found issue 12's Notebook 7 refusals: a headline in another pace of the host than
every sample after it, with no wait and no other process on the cores (BENCHMARKS.md,
session 29).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

RECORDS: list[tuple[float, ...]] = []


def install() -> None:
    """Record every ``time_steps`` the profiler's iteration module makes from now on."""
    from skyline_nb.profiler import iteration
    from skyline_nb.profiler.cpuwait import waited_ns

    plain = iteration.time_steps

    def probed(step: Any, device: Any, precision: Any, busy: bool = False) -> Any:
        wall, cpu, queued = time.perf_counter(), time.process_time(), waited_ns() or 0
        timing = plain(step, device, precision, busy)
        RECORDS.append((round(wall, 3), round(1000 * (time.perf_counter() - wall), 1),
                        len(timing.ms), round(statistics.median(timing.ms), 3),
                        sum(timing.waited), round(1000 * (time.process_time() - cpu), 1),
                        round(((waited_ns() or 0) - queued) / 1e6, 1)))
        return timing

    iteration.time_steps = probed


def take() -> list[tuple[float, ...]]:
    """The records since the last call."""
    taken = list(RECORDS)
    RECORDS.clear()
    return taken

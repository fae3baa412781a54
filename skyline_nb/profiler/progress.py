"""Progress of a profile, for a progress line in the widget or on the command line.

The profile announces each stage as it starts. How far it is and how long is left are counted
in iterations of the user's batch (the unit its cost is measured in): each stage weighs what it
is expected to run, e.g. a sample at 4× the batch weighs 4 per iteration. Until the first
iteration has been timed there is no estimate of the time left.

A stage that times iterations at once (an instrumented run, a sample timed again) is marked
``timed``, and displays draw nothing for it (``Progress.timed``): on a notebook's own cores the
browser and the server react to a progress message for ~``DRAW_MS``, and the kernel's threads
waited for a CPU in that time (JupyterLab on 2 cores: every op-timing run of 5 profiles of a
GPT-2 "waited", 0 of 5 without progress messages; BENCHMARKS.md, session 20). Every other stage
starts with work that is not timed (building, memory measurements), which covers that moment
where it lasts long enough (``covers``); where it does not (a sample's peak of a sub-millisecond
step), the stage is marked ``timed`` too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Expected cost of a whole profile in iterations of the user's batch (BENCHMARKS.md, "cost").
EXPECTED_ITERATIONS = 35.0
EXPECTED_WITHOUT_SAMPLES = 15.0
# How long a notebook's browser and server draw a progress message on the kernel's cores.
DRAW_MS = 25.0


def covers(untimed_ms: float) -> bool:
    """Whether a stage's work before it times anything lasts long enough (twice ``DRAW_MS``)
    for the front end to draw its message meanwhile. The issue's MLP of 0.6–0.7 ms steps: each
    sample's peak took ~3 ms, its timed steps landed in the drawing, and its drag was off in 4
    of 12 JupyterLab profiles against 0 of 16 in a terminal (BENCHMARKS.md, session 28)."""
    return untimed_ms >= 2 * DRAW_MS


@dataclass(frozen=True)
class Progress:
    """One stage starting: what it does, the share of the profile done, seconds elapsed and an
    estimate of the seconds left (None until the iteration time is known)."""

    stage: str
    done: float
    elapsed_s: float
    remaining_s: float | None
    # iterations are timed as the stage starts: a display draws nothing now (the module doc)
    timed: bool = False
    # what the user may act on before the profile ends (one torch thread measured far faster
    # on a busy machine: ``threads.py``), shown until it ends; None: nothing
    notice: str | None = None


class Reporter:
    """Turns the profile's stages into ``Progress`` calls (a no-op without a callback).

    The share done never moves back: when a stage brings more work than expected (a machine
    that is busy asks for more runs, a large sample weighs many iterations), the work still
    ahead is spread over the share not yet shown, rather than the whole share recomputed over
    the larger total (which made a bar jump back, 83 % to 55 % in one run)."""

    def __init__(self, callback: Callable[[Progress], None] | None, predict: bool) -> None:
        self.callback = callback
        self.total = EXPECTED_ITERATIONS if predict else EXPECTED_WITHOUT_SAMPLES
        self.done = 0.0
        self.iteration_ms: float | None = None
        self.notice: str | None = None  # carried by every later ``Progress``
        self.started = time.perf_counter()
        self._uncounted_s = 0.0  # the callback's (a notebook waits for its browser), ``uncounted``
        self._pending = 0.0
        self._shown = (0.0, 0.0)  # (share shown, iterations done when it was shown)

    def stage(self, text: str, iterations: float, timed: bool = False) -> None:
        """A stage starts that runs about ``iterations`` of the user's batch; ``timed``: it
        times iterations at once (``Progress.timed``)."""
        self.done += self._pending
        self._pending = iterations
        self.total = max(self.total, self.done + iterations)
        share, at = self._shown
        if self.total > at:
            share += (1.0 - share) * (self.done - at) / (self.total - at)
        self._shown = (share, self.done)
        self._report(text, share, timed)

    def profile_s(self) -> float:
        """Seconds the profile itself has run: elapsed, less the time the callback took (a
        notebook's waits for its front end to draw, ``quiet_cores``, are not the profile's
        cost, which budgets its samples: ``samples.sampling_budget_ms``)."""
        return time.perf_counter() - self.started - self._uncounted_s

    @contextmanager
    def uncounted(self) -> Iterator[None]:
        """Work inside is shown but is not the profile's cost (``profile_s``): what a process
        does once for every profile after it (the device's peaks, ``roofline.py``)."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self._uncounted_s += time.perf_counter() - began

    def finish(self) -> None:
        """The profile is done: the whole share, nothing left."""
        self.done += self._pending
        self._pending = 0.0
        self.total = self.done
        self._report("done", 1.0)

    def _report(self, text: str, share: float, timed: bool = False) -> None:
        if self.callback is None:
            return
        remaining = None
        if self.iteration_ms is not None:
            remaining = (self.total - self.done) * self.iteration_ms / 1000.0
        began = time.perf_counter()
        self.callback(Progress(text, min(share, 1.0), began - self.started, remaining, timed,
                               self.notice))
        self._uncounted_s += time.perf_counter() - began

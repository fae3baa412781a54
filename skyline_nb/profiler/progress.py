"""Progress of a profile, for a progress line in the widget or on the command line.

The profile announces each stage as it starts. How far it is and how long is left are counted
in iterations of the user's batch (the unit its cost is measured in): each stage weighs what it
is expected to run, e.g. a sample at 4× the batch weighs 4 per iteration. Until the first
iteration has been timed there is no estimate of the time left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

# Expected cost of a whole profile in iterations of the user's batch (BENCHMARKS.md, "cost").
EXPECTED_ITERATIONS = 35.0
EXPECTED_WITHOUT_SAMPLES = 15.0


@dataclass(frozen=True)
class Progress:
    """One stage starting: what it does, the share of the profile done, seconds elapsed and an
    estimate of the seconds left (None until the iteration time is known)."""

    stage: str
    done: float
    elapsed_s: float
    remaining_s: float | None


class Reporter:
    """Turns the profile's stages into ``Progress`` calls (a no-op without a callback)."""

    def __init__(self, callback: Callable[[Progress], None] | None, predict: bool) -> None:
        self.callback = callback
        self.total = EXPECTED_ITERATIONS if predict else EXPECTED_WITHOUT_SAMPLES
        self.done = 0.0
        self.iteration_ms: float | None = None
        self.started = time.perf_counter()
        self._pending = 0.0

    def stage(self, text: str, iterations: float) -> None:
        """A stage starts that runs about ``iterations`` of the user's batch."""
        self.done += self._pending
        self._pending = iterations
        self.total = max(self.total, self.done + iterations)
        if self.callback is None:
            return
        remaining = None
        if self.iteration_ms is not None:
            remaining = (self.total - self.done) * self.iteration_ms / 1000.0
        self.callback(Progress(text, min(self.done / self.total, 1.0),
                               time.perf_counter() - self.started, remaining))

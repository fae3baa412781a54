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
        self.started = time.perf_counter()
        self._pending = 0.0
        self._shown = (0.0, 0.0)  # (share shown, iterations done when it was shown)

    def stage(self, text: str, iterations: float) -> None:
        """A stage starts that runs about ``iterations`` of the user's batch."""
        self.done += self._pending
        self._pending = iterations
        self.total = max(self.total, self.done + iterations)
        share, at = self._shown
        if self.total > at:
            share += (1.0 - share) * (self.done - at) / (self.total - at)
        self._shown = (share, self.done)
        self._report(text, share)

    def finish(self) -> None:
        """The profile is done: the whole share, nothing left."""
        self.done += self._pending
        self._pending = 0.0
        self.total = self.done
        self._report("done", 1.0)

    def _report(self, text: str, share: float) -> None:
        if self.callback is None:
            return
        remaining = None
        if self.iteration_ms is not None:
            remaining = (self.total - self.done) * self.iteration_ms / 1000.0
        self.callback(Progress(text, min(share, 1.0), time.perf_counter() - self.started,
                               remaining))

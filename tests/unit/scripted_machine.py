"""A scripted machine for ``sample_plan.sample_curve``: ``measure(n)`` returns what the
profiler would measure at n (the peak, then the iteration time), and ``sample`` fits the
report's curves through what was chosen. Shared by the CPU and GPU planning tests."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler import timing
from skyline_nb.profiler.sample_plan import Samples, sample_curve
from skyline_nb.profiler.sampling import Refusal, SizeFailed, fails_above, fails_below

MB = 1 << 20


def cpu_timed(ms: float) -> float:
    """What a CPU's sample timing is expected to spend (``timing.SAMPLE``, one per chunk)."""
    return timing.SAMPLE.quiet_ms(ms, 1)


def gpu_timed(ms: float) -> float:
    """A GPU's: the headline's precision, chunks of three."""
    return timing.HEADLINE.quiet_ms(ms, 3)


class FakeOutOfMemory(Exception):
    """The scripted machine's out-of-memory."""


@dataclass
class Machine:
    """Times and peaks by batch size; out of memory above ``oom_above``; the user's code
    raising where ``refuses`` says; ``calls`` in order."""

    time: Callable[[int], float]
    peak: Callable[[int], int] = lambda n: MB * n + 50 * MB
    oom_above: float = math.inf
    refuses: Callable[[int], bool] = lambda n: False
    calls: list[int] = field(default_factory=list)

    def __call__(self, n: int) -> tuple[int, float]:
        self.calls.append(n)
        if n > self.oom_above:
            raise FakeOutOfMemory(n)
        if self.refuses(n):
            raise SizeFailed(Refusal(n, f"the input provider raised ValueError: no batch of {n}"))
        return self.peak(n), self.time(n)


def sample(machine: Machine, user: int, capacity: int = 1 << 40, budget_ms: float = 1e9,
           tolerance: float = 0.03,
           retime: Callable[[int, float | None], float] | None = None,
           timed_ms: Callable[[float], float] = cpu_timed, reach: int = 4, between: bool = False
           ) -> tuple[Samples, PerformanceModels]:
    """The sizes ``sample_curve`` chooses on ``machine`` from ``user``, and their curves."""
    found = sample_curve(machine, user, machine.peak(user), machine.time(user), capacity,
                         oom_errors=(FakeOutOfMemory,), tolerance=tolerance,
                         budget_ms=budget_ms, timed_ms=timed_ms, retime=retime, reach=reach,
                         between=between)
    sizes = sorted(found.peaks)
    models = PerformanceModels.from_samples(
        sizes, [found.times[n] for n in sizes], [found.peaks[n] for n in sizes], capacity,
        found.reason, tolerance=tolerance, fails_at=fails_above(found.refused, user),
        fails_below=fails_below(found.refused, user))
    return found, models

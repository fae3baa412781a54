"""A scripted ``iteration.time_block``: level 1's settling logic on exact block times."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from skyline_nb.profiler import iteration
from skyline_nb.profiler.providers import Trial


def script_blocks(monkeypatch: pytest.MonkeyPatch, blocks: list[tuple[float, float]]) -> list[int]:
    """Timed blocks (ms per iteration, wait fraction) in this order, the last one repeating;
    each still steps the trial once per call. Returns the iterations per block as they run."""
    sizes: list[int] = []
    script: Iterator[tuple[float, float]] = iter(blocks)
    last = blocks[-1]

    def time_block(trial: Trial, device: object, n: int) -> iteration.Timed:
        nonlocal last
        last = next(script, last)
        sizes.append(n)
        return iteration.Timed(last[0], trial.step(), last[1])

    monkeypatch.setattr(iteration, "time_block", time_block)
    return sizes

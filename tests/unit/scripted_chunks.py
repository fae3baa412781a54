"""A scripted ``timing.timed_chunk``: level 1's stopping rules on exact iteration times."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from skyline_nb.profiler import timing


def script_chunks(
    monkeypatch: pytest.MonkeyPatch, chunks: list[tuple[float, ...]]
) -> list[int]:
    """Chunks (ms per iteration, wait fraction[, minor faults per iteration]) in this order,
    the last one repeating; each still steps the trial once per iteration. Returns the
    iterations per chunk as they run."""
    sizes: list[int] = []
    script: Iterator[tuple[float, ...]] = iter(chunks)
    last = chunks[-1]

    def chunk(step: Callable[[], Any], device: object,
              n: int) -> tuple[list[float], float, float | None]:
        nonlocal last
        last = next(script, last)
        sizes.append(n)
        for _ in range(n):
            step()
        return [last[0]] * n, last[1], (last[2] if len(last) > 2 else None)

    monkeypatch.setattr(timing, "timed_chunk", chunk)
    return sizes

"""Memory a training step keeps from one iteration to the next: a leak no peak shows.

A profile measures one iteration's peak. A step that keeps something of every iteration — its
outputs appended to a list for metrics, a forward hook that stores activations — has a fine
peak at iteration three and runs out of memory at iteration three thousand. So level 1 reads
the bytes alive between its warm-up iterations (``mark_alive`` after each, young-generation
garbage collected first, so that reference cycles a plain loop's collector would free do not
count) and ``kept_per_step`` says what each iteration added when the last two added about the
same. Lazily made state (an optimizer's buffers at its first step, a cache filled once) grows
once, not at every iteration; a value replaced each iteration (the last loss, kept for logging)
does not grow at all; nor does ``losses.append(loss)`` much: backward frees the graph's saved
tensors, and what stays is the loss itself (its graph's nodes are Python objects).

Where the bytes are read: CUDA, the allocator's counter; CPU, the running sum of the CPU
allocator's reports at a marker allocation of ``ALIVE_BYTES`` (``iteration._tracked_warmup``).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

from skyline_nb.export.units import format_bytes

# An allocation of this odd size marks "bytes alive now" in the CPU allocator's reports.
ALIVE_BYTES = 4081  # phases.py marks with 4085–4091, step_peak.py with 4093
# What counts as kept per iteration: both of the last two iterations added at least this share
# of the peak (1,000 iterations then double it) and at least MIN_BYTES, and they agree within
# AGREE of each other.
MIN_SHARE, MIN_BYTES, AGREE = 0.001, 1024, 0.25
# Readings needed: after three iterations (the first may make lazy state).
READINGS = 3


def between_steps() -> None:
    """Collect the young generations, so that reference cycles made by the step are freed, as
    a plain loop's collector frees them, before the bytes alive are read."""
    gc.collect(1)


def mark_alive() -> None:
    """A marker allocation in the CPU allocator's reports (``ALIVE_BYTES``)."""
    import torch

    torch.empty(ALIVE_BYTES, dtype=torch.uint8)


def take_readings(events: list[tuple[int, int]]) -> tuple[list[int], list[tuple[int, int]]]:
    """The CPU allocator's running sum (``AllocatorReports.peaks``) at each ``mark_alive``,
    and the reports without the markers' own (they count in no peak)."""
    live, found, kept = 0, [], []
    for event in events:
        if event[1] == ALIVE_BYTES:
            found.append(live)
        elif event[1] != -ALIVE_BYTES:
            live += event[1]
            kept.append(event)
    return found, kept


def kept_per_step(alive: Sequence[int], peak_bytes: int) -> int:
    """Bytes each iteration kept, from the bytes alive after each of at least three
    consecutive iterations: the mean of the last two increases when both are at least
    ``MIN_SHARE`` of ``peak_bytes`` (and ``MIN_BYTES``) and agree within ``AGREE``; else 0."""
    if len(alive) < READINGS:
        return 0
    first, second = alive[-2] - alive[-3], alive[-1] - alive[-2]
    least = max(MIN_BYTES, MIN_SHARE * peak_bytes)
    if min(first, second) < least or abs(first - second) > AGREE * max(first, second):
        return 0
    return (first + second) // 2


def kept_warning(kept: int, peak_bytes: int) -> str | None:
    """What a step that keeps ``kept`` bytes per iteration means for the user's loop."""
    if kept <= 0:
        return None
    doubles = max(1, round(peak_bytes / kept))
    return (
        f"each iteration keeps {format_bytes(kept)} more alive than the one before: memory "
        f"grows by that at every step of your loop (the peak shown is of an early iteration; "
        f"after {doubles:,} more it is twice as high). The step holds on to tensors of every "
        "iteration, e.g. outputs appended to a list or kept by a hook: keep numbers "
        "(loss.item()) or a running total instead"
    )

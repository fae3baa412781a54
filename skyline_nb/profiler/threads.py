"""A busy CPU and several torch threads: the user's step at one thread, measured, not guessed.

Each parallel op waits for its slowest thread, and a thread that lost its core waits a whole
time slice. How much that costs depends on how much CPU the scheduler leaves this process, which
nothing here can read in advance: Linux's autogroups share the cores between sessions before
threads, so a notebook kernel (a session of its own) beside one busy process of another session
gets one of two cores for its two threads. A GPT-2-style step at batch 8 on the 2-core dev
machine (BENCHMARKS.md, session 24): 0.2 s quiet at 2 threads; beside one spinning process
4.0 s at 2 threads and 0.31 s at 1 in a Jupyter kernel, 0.75 s and 0.31 s in a plain process
of the spinner's own session. So when the headline's steps waited for a CPU, the profile times
a few steps at one thread (on its own trial, at the user's batch, as busy a moment as the
headline's) and says what it found; torch's thread count is set back at once (and by
``isolation`` whatever happens).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from skyline_nb.export.units import format_ms
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.timing import timed_chunk

ITERATIONS = 3  # timed at one thread at least, over at least TIMED_MS, after SETTLE_MS
TIMED_MS = 10.0
# Untimed steps first: the idle OpenMP workers spin on after the last parallel op at the user's
# count (libgomp), on the CPU share this process has; the MLP read 2.7 ms at one thread
# 3 steps after the switch, 0.8 ms in a plain loop at one thread
SETTLE_MS = 20.0
SLOWER = 2.0
# One thread faster than this factor is worth saying as a speed-up, and leads the notes
FASTER = 1.25


def one_thread_ms(step: Callable[[], Any], device: Device, headline_ms: float) -> float:
    """``step``'s time at one torch thread: the median of at least ``ITERATIONS`` over at least
    ``TIMED_MS``, after untimed ones for ``SETTLE_MS``; or, when a step took more than
    ``SLOWER`` × ``headline_ms`` even once settled, the faster of the first two alone (one
    thread is then no faster, and more of it would cost more than the comparison tells). The
    first step alone does not decide: the idle workers' spin inflated it to 6.1 ms beside a
    spinner of the same session, where a plain loop at one thread ran the step in 0.8 ms."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        began = time.perf_counter()
        first = _timed_once(step, device)
        _settle(step, began)
        if first > SLOWER * headline_ms:
            first = min(first, _timed_once(step, device))
            if first > SLOWER * headline_ms:
                return first
        count = max(ITERATIONS, math.ceil(TIMED_MS / max(first, 1e-3)))
        return statistics.median(timed_chunk(step, device, count)[0])
    finally:
        torch.set_num_threads(threads)


def _timed_once(step: Callable[[], Any], device: Device) -> float:
    return timed_chunk(step, device, 1)[0][0]


def _settle(step: Callable[[], Any], began: float) -> None:
    """Untimed steps until ``SETTLE_MS`` have passed since ``began``."""
    while 1000 * (time.perf_counter() - began) < SETTLE_MS:
        step()


def faster(one_ms: float, headline_ms: float) -> bool:
    """Whether one thread ran the step clearly faster than the user's threads."""
    return one_ms * FASTER <= headline_ms


def one_thread_note(threads: int, headline_ms: float, one_ms: float) -> str:
    """What the comparison found, for the notes: a speed-up and the call that gets it, or that
    one thread is no faster. A speed-up leads the notes, and the widget shows the first note's
    start on the line the notes fold into: the speed-up and the call come first there."""
    if faster(one_ms, headline_ms):
        return (
            f"{_speed_up(headline_ms, one_ms)}: "
            "torch.set_num_threads(1) before your loop runs it at that pace while the machine "
            f"stays this busy; with {threads} torch threads each op waits for its slowest "
            "thread, and this machine leaves them too little CPU"
        )
    return (
        f"at one thread the same step took {format_ms(one_ms)}, no faster than at {threads} "
        "threads: the threads are not what makes it slow"
    )


def _speed_up(headline_ms: float, one_ms: float) -> str:
    """The note's and the notice's lead: how much faster one thread ran the step."""
    return (f"One torch thread ran this step {headline_ms / one_ms:.1f}× faster on this busy "
            f"machine ({format_ms(one_ms)} against {format_ms(headline_ms)})")


def one_thread_notice(threads: int, headline_ms: float, one_ms: float) -> str:
    """What the progress display says while the rest of the profile runs, once one thread was
    measured ``faster``: the profile may take minutes at the user's threads on such a machine
    (a GPT-2-style step of 4.3 s: 149 s), and the user can stop it and measure one thread."""
    return (
        f"{_speed_up(headline_ms, one_ms)}. The profile goes on at {threads} threads, as your "
        "loop runs now; to measure one thread instead, Cancel, call torch.set_num_threads(1) "
        "and profile again."
    )

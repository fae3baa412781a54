"""What measuring one more batch size is expected to cost, before it is measured: what
``sample_plan`` spends its budget by, and whether the progress bar draws the size's stage
(``samples.py``). Imports no torch."""

from __future__ import annotations

from collections.abc import Callable


def expected_ms(times: dict[int, float], size: int) -> float:
    """An iteration at ``size`` as expected before it is measured: the time of the nearest
    measured size (``times``: ms by batch size), scaled by the batch above it."""
    near = min(times, key=lambda n: abs(n - size))
    return times[near] * max(1.0, size / near)


def cost_at(user_ms: float, at_ms: float, timed_ms: Callable[[float], float]) -> float:
    """What measuring a size of ``at_ms`` iterations is expected to take: the peak's window
    and the timed iterations (``timed_ms``)."""
    return peak_window_ms(user_ms, at_ms) + timed_ms(at_ms)


def peak_window_ms(user_ms: float, at_ms: float) -> float:
    """The peak's window at a size of ``at_ms`` iterations, before its timed ones: an iteration
    on the user's inputs and one tracked at the size, about 1.5× its time."""
    return user_ms + 1.5 * at_ms


def line_ms(times: dict[int, float], user: int, size: int) -> float:
    """``size``'s time on the line through the user's batch and the one below, at most
    ``expected_ms``."""
    below = max(n for n in times if n < user)
    slope = max(0.0, (times[user] - times[below]) / (user - below))
    return min(times[user] + slope * (size - user), expected_ms(times, size))

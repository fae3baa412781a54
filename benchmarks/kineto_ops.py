"""What a plain training step spends inside aten ops, by torch's own profiler (kineto): the
reference ``trust.py`` holds the profile's untracked time against.

The profile's untracked time (iteration − Σ op times) is not zero on a model whose step is a few
Python-heavy milliseconds: the module calls, the autograd engine between backward ops and the
optimizer's Python loop run outside every op. On the session-30 host the example MLP (0.8 ms
steps) spent ~20–25 % of its step there. Held against zero, that reads as an error; held against
what torch's own profiler finds outside its top-level aten ops, it is the measurement it is.

Reference untracked % = (plain median − Σ top-level aten op time per step) / plain median: an
op counts once, at its outermost aten event (``aten::linear`` holds its ``aten::t`` and
``aten::addmm``); backward ops, which kineto nests under the autograd engine's
``evaluate_function`` events (not aten), count at their own level. Kineto's RecordFunction
costs ~1–3 µs an op, part of it inside the events: the reference under-reads the untracked time
by about that much per op, as the profile's own op windows do (~2 µs an op of Python dispatch,
BENCHMARKS.md, issue 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.profiler import ProfilerActivity, profile


def _outermost_aten(event: Any) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return False
        parent = parent.cpu_parent
    return event.name.startswith("aten::")


def aten_ms_per_step(step: Callable[..., Any], inputs: tuple, steps: int) -> float:
    """Σ of the outermost aten ops' durations per step, over ``steps`` steps of a warm model."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step(*inputs)
    total_us = sum(e.cpu_time_total for e in prof.events() if _outermost_aten(e))
    return total_us / 1e3 / steps


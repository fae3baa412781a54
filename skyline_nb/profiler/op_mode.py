"""The op tracker's dispatch mode, which the memory run's other trackers ride.

Every Python dispatch mode on the stack costs each op ~16 µs of torch's own machinery (the
mode stack, the dispatch rule lookup, the wrapper that keeps Dynamo out of the mode's frames):
a no-op mode added 16–18 µs an op to the example Transformer's step at batch 16 (567 ops, 34
→ 44 ms with one, 62 ms with three; dev-2c, 2 threads). The memory run's peak tracker and
FLOP counter used to be modes of their own around the op tracker's, so each op paid three
times; as riders of one mode (``OpRider``) it pays once. What each of them sees is unchanged:
the riders' work before an op, then the op timed alone (the window holds nothing else), then
the op's record, then the riders' work after it, in their order (the nesting they had).
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, Protocol

import torch

from skyline_nb.profiler import torch_private as tp

if TYPE_CHECKING:
    from skyline_nb.profiler.operations import OperationTracker

DispatchMode = tp.dispatch_mode_base()
SKIPPED_NAMESPACES = ("profiler",)  # record_function markers: not work the user did
_clock = time.perf_counter_ns


class _Noop(DispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


@functools.cache
def load_mode_machinery() -> None:
    """Run one op under a dispatch mode, once per process, before anything is measured.

    The first call of any mode's ``__torch_dispatch__`` in a process imports ``torch._dynamo``
    (torch wraps every mode's dispatch in ``_disable_dynamo``; building a ``torch.optim``
    optimizer imports it too): 0.8 s and ~700 modules, with reference cycles that hold the frames
    it ran in. It ran inside the first profile: in level 1, where the iteration provider built
    its optimizer (the stock examples' first profiles counted 1.06–1.32 s of stages against
    0.13–0.37 s for the next, so their samples were budgeted on that); without an optimizer, in
    the memory run, inside the user's forward, where those frames kept the forward's locals
    alive while the collector was paused: a 2-layer MLP updated by hand held its hidden layer
    and logits (65 KiB) through the update, its peak, and "other" read −65 KiB beside a warning
    (BENCHMARKS.md, session 34)."""
    with _Noop():
        torch.zeros(1).add_(1)


class OpRider(Protocol):
    """A tracker whose per-op work rides the op tracker's mode."""

    def before_op(self) -> Any:
        """Called before each op; what it returns comes back to ``after_op``."""

    def after_op(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any,
                 before: Any) -> None:
        """Called after each op (and after the op tracker recorded it)."""


class OpMode(DispatchMode):
    """Times each op and hands it to the tracker for bookkeeping, and to the riders."""

    def __init__(self, tracker: OperationTracker, riders: tuple[OpRider, ...] = ()) -> None:
        super().__init__()
        self.tracker = tracker
        self.riders = riders

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        befores = [rider.before_op() for rider in self.riders]
        if func.namespace in SKIPPED_NAMESPACES:
            out = func(*args, **kwargs)
        else:
            out = self._timed(func, args, kwargs)
        for rider, before in zip(self.riders, befores, strict=True):
            rider.after_op(func, args, kwargs, out, before)
        return out

    def _timed(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        tracker = self.tracker
        if tracker.pending:
            tracker.resolve_pending()
        node = tp.current_autograd_node()
        if tracker.host_clock:
            # The window holds only the op: the plain iteration calls backward and optimizer
            # kernels from C++, so every instruction of ours inside it (a Timer method call,
            # OpOverload.__call__'s frame, a kwargs dict) is counted as op time that the plain
            # iteration never spends: ~0.5 µs of the ~3 µs a tiny op's window cost.
            op = getattr(func, "_op", func)
            if kwargs:
                start = _clock()
                out = op(*args, **kwargs)
                stop = _clock()
            else:
                start = _clock()
                out = op(*args)
                stop = _clock()
            tracker.record(func, node, out, stop - start, (args, kwargs))
            return out
        timer = tracker.new_timer()
        timer.start()
        out = func(*args, **kwargs)
        timer.stop()
        tracker.record(func, node, out, timer, (args, kwargs))
        return out

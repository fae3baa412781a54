"""A report as a Chrome trace: Trace Event Format JSON that Perfetto and chrome://tracing open.

The report holds how long each op took, not when it started: the profiler timed the ops of one
instrumented iteration one by one. The trace lays those durations end to end in the order the
ops ran, so every start time is a sum of measured durations, not a recorded timestamp; the
trace's ``metadata`` says so too. Times are whole nanoseconds, written as microseconds (``ts``
and ``dur`` of complete ``"X"`` events, as the format asks).

One process (the model) with four tracks (threads named by ``"M"`` metadata events), one after
the other in time:

- ``forward``: the ops in the tree's order (execution order), each module a slice spanning
  exactly its children, so slices nest as modules do. An op that only ran backward (a gradient
  accumulated into a parameter) is not on it.
- ``backward``: the backward time of every op that has one, in the reverse of the tree's order
  at every level, as autograd runs a chain of ops (branches that autograd interleaves are drawn
  one after the other); modules nest as on ``forward``.
- ``optimizer``: the optimizer node spanning its ops, in the order they ran.
- ``untracked``: one slice with the iteration's time no op claimed (the tree's untracked node),
  when it holds any. ``metadata.untracked_ms`` keeps the measured difference, which can be
  negative (the tree then holds each op's share of the iteration and no untracked time).

A module instance called at several places holds all its ops, so its slice spans them all.

Memory is a counter (``"C"`` events) with one point per ``Report.memory_timeline`` entry, at
non-decreasing times: a run of consecutive entries naming the same op in the same phase is
spread evenly over that op's slice in that phase, the last at the slice's end (entries name the
forward op whose backward ran); entries that cannot be placed so (no op named, as in the
optimizer phase; an op without a slice; a slice ending before the previous point) are spread
evenly between the placed points around them, with the trace's start and the end of the op
tracks as the bounds at either end.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyline_nb import __version__
from skyline_nb.categories import NodeKind
from skyline_nb.export import atomic_output

if TYPE_CHECKING:
    from skyline_nb.report import Node, Report

PID = 1
TRACKS = ("forward", "backward", "optimizer", "untracked")  # thread ids 1, 2, 3, 4
COUNTER = "tracked memory"
TIMING_NOTE = (
    "start times are laid out from measured durations in execution order (ops were timed one "
    "by one in an instrumented iteration), not recorded timestamps"
)
MEMORY_NOTE = (
    "tracked bytes after each op of the memory run, at the end of the op named (runs naming "
    "one op spread over its slice), or spread evenly between neighbours when it cannot be placed"
)

Duration = Callable[["Node"], "float | None"]


def save_chrome_trace(report: Report, path: str | Path, *, overwrite: bool = True) -> Path:
    """Write ``chrome_trace(report)`` to ``path`` atomically (``export.atomic_output``).

    JSON is streamed into a temporary file that replaces ``path`` only once complete, so a
    failure halfway (an interrupt, a value JSON cannot hold) leaves no partial file and any
    previous one untouched. Raises FileExistsError when ``path`` exists and ``overwrite`` is
    false.
    """
    path = Path(path)
    trace = chrome_trace(report)
    with atomic_output(path, overwrite=overwrite) as temp, temp.open("w", encoding="utf-8") as f:
        json.dump(trace, f, separators=(",", ":"), allow_nan=False)
    return path


def chrome_trace(report: Report) -> dict[str, Any]:
    """The trace as a JSON-ready dict: ``traceEvents``, ``displayTimeUnit`` and ``metadata``."""
    trace = _Trace()
    model = [c for c in report.tree.children if c.kind in (NodeKind.MODULE, NodeKind.OP)]
    trace.track("forward", model, _forward_ms, reverse=False)
    trace.track("backward", model, lambda n: n.backward_ms, reverse=True)
    optimizer = [c for c in report.tree.children if c.kind == NodeKind.OPTIMIZER]
    trace.track("optimizer", optimizer, lambda n: n.forward_ms, reverse=False)
    ops_end = trace.clock
    untracked = [c for c in report.tree.children
                 if c.kind == NodeKind.UNTRACKED and c.forward_ms > 0]
    trace.track("untracked", untracked, lambda n: n.forward_ms, reverse=False)
    timeline = report.memory_timeline
    counter = [
        {"name": COUNTER, "ph": "C", "pid": PID, "ts": _us(ts), "args": {"bytes": nbytes}}
        for ts, (_, _, nbytes) in zip(_counter_times(timeline, trace.ops, ops_end), timeline,
                                      strict=True)
    ]
    return {
        "traceEvents": [*_names(report), *trace.events, *counter],
        "displayTimeUnit": "ms",
        "metadata": _metadata(report, trace),
    }


@dataclass
class _Trace:
    """Slices laid out on a clock (integer ns) that only op slices advance."""

    clock: int = 0
    elapsed_ms: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list)
    ops: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (track, path)
    totals_ms: dict[str, float] = field(default_factory=dict)  # Σ op times by track

    def track(self, name: str, nodes: list[Node], duration: Duration, *, reverse: bool) -> None:
        self.totals_ms[name] = 0.0
        for node in reversed(nodes) if reverse else nodes:
            self._slices(node, name, duration, reverse)

    def _slices(self, node: Node, track: str, duration: Duration, reverse: bool) -> bool:
        """Append the slices of ``node``'s subtree, parents first; False when none ran here."""
        if node.kind in (NodeKind.OP, NodeKind.UNTRACKED):
            ms = duration(node)
            if ms is None:
                return False
            if not math.isfinite(ms) or ms < 0:
                raise ValueError(f"{node.path or node.name}: {ms} ms is not a {track} time")
            start = self.clock
            self.elapsed_ms += ms
            self.totals_ms[track] += ms
            self.clock = round(self.elapsed_ms * 1e6)
            self.ops[(track, node.path)] = (start, self.clock)
            self.events.append(_complete(node, track, start, self.clock, ms))
            return True
        slot, start = len(self.events), self.clock
        self.events.append({})
        children = reversed(node.children) if reverse else node.children
        placed = [self._slices(child, track, duration, reverse) for child in children]
        if not any(placed):
            del self.events[slot]
            return False
        self.events[slot] = _complete(node, track, start, self.clock, duration(node))
        return True


def _forward_ms(node: Node) -> float | None:
    """Forward time, or None for an op that only ran backward (nothing of it ran forward)."""
    if node.kind == NodeKind.OP and node.forward_ms == 0 and node.backward_ms is not None:
        return None
    return node.forward_ms


def _complete(node: Node, track: str, start: int, end: int, ms: float | None) -> dict[str, Any]:
    """A complete ("X") event for ``node`` on ``track`` from ``start`` to ``end`` ns."""
    module = node.kind == NodeKind.MODULE
    flops = node.backward_flops if track == "backward" else node.forward_flops
    args: dict[str, Any] = {"path": node.path, "kind": str(node.kind), "ms": ms, "flops": flops}
    if module:
        args["type"] = node.name
    if node.frames:
        args["where"] = [f"{f.file}:{f.line}" for f in node.frames]
    return {
        "name": node.path if module else node.name, "cat": str(node.kind), "ph": "X",
        "ts": _us(start), "dur": _us(end - start), "pid": PID,
        "tid": TRACKS.index(track) + 1, "args": args,
    }


def _counter_times(
    timeline: list[list[Any]], ops: dict[tuple[str, str], tuple[int, int]], end: int
) -> list[int]:
    """The time (ns) of each timeline entry's counter point (the rule is in the module doc)."""
    times: list[int | None] = [None] * len(timeline)
    last, i = 0, 0
    while i < len(timeline):
        phase, path, _ = timeline[i]
        run = i + 1
        while run < len(timeline) and timeline[run][:2] == [phase, path]:
            run += 1
        span = ops.get((phase, path)) if path else None
        if span is not None and span[1] > last:
            start = max(span[0], last)
            count = run - i
            for k in range(count):
                times[i + k] = start + (span[1] - start) * (k + 1) // count
            last = span[1]
        i = run
    return _spread(times, end)


def _spread(times: list[int | None], end: int) -> list[int]:
    """``times`` with each run of Nones spread evenly between the known times around it."""
    placed: list[int] = []
    i = 0
    while i < len(times):
        known = times[i]
        if known is not None:
            placed.append(known)
            i += 1
            continue
        run = i
        while run < len(times) and times[run] is None:
            run += 1
        low = placed[-1] if placed else 0
        after = times[run] if run < len(times) else None
        high = max(low, after if after is not None else end)
        count = run - i
        placed.extend(low + (high - low) * (k + 1) // (count + 1) for k in range(count))
        i = run
    return placed


def _names(report: Report) -> Iterable[dict[str, Any]]:
    """Metadata ("M") events naming the process and its tracks, in this order."""
    title = f"{report.tree.name}, batch {report.batch_size} on {report.device.kind}"
    yield {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": title}}
    yield {"name": "process_labels", "ph": "M", "pid": PID, "tid": 0,
           "args": {"labels": "durations laid out in execution order, not timestamps"}}
    for tid, track in enumerate(TRACKS, start=1):
        yield {"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": track}}
        yield {"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": tid,
               "args": {"sort_index": tid}}


def _metadata(report: Report, trace: _Trace) -> dict[str, Any]:
    return {
        "source": f"skyline_nb {__version__}",
        "timing": TIMING_NOTE,
        "memory_counter": MEMORY_NOTE,
        "model": report.tree.name,
        "batch_size": report.batch_size,
        "device": report.device.name,
        "iteration_ms": report.iteration_ms,
        "instrumented_ms": report.instrumented_ms,
        "untracked_ms": report.untracked_ms,
        **{f"{track}_ms": trace.totals_ms[track] for track in TRACKS},
        "peak_bytes": report.peak_bytes,
        "torch_version": report.torch_version,
    }


def _us(ns: int) -> float:
    """Whole nanoseconds as the format's microseconds."""
    return ns / 1000

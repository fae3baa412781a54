"""``impossible_values(report)``: every value a report would show that cannot be true.

For tests that run real profiles: ``assert impossible_values(report) == []``. Each entry is a
sentence naming the value, so a failing assertion says what is wrong. Strict, with one noise
allowance, stated here:

- Untracked time (the uninstrumented iteration minus the ops timed one by one) is a difference
  of two measurements and may be negative: down to ``UNTRACKED_NOISE_SHARE`` (25 %) of the
  iteration, or ``UNTRACKED_NOISE_MS`` (0.05 ms) for iterations under 0.2 ms. 25 % is the
  most the project accepts for a single profile beside a competing busy process (±10 % on a
  quiet machine is a benchmark target, not a per-profile guarantee; BENCHMARKS.md): a check run
  on every profile in CI must not fail on a loaded runner.
- Everything else has no noise to allow for: an op's time is a measured duration (≥ 0), a
  module's time and bytes are sums of its children's, the root's time is the iteration, and the
  models' bounds are exact arithmetic. Comparisons allow float rounding only (``ROUNDING``,
  relative).

Checked: measured headline values (finite, positive; the time at one thread too, where
measured), negative times, FLOPs on the untracked time (which no op holds), a node larger than its
parent (time, activation bytes, parameter bytes), the breakdown's total against the header's
iteration time, and — when dragging is on — the predictions over the whole drag range
(positive, finite time and throughput, positive peak, and a maximum throughput that is the
largest predicted anywhere in the range: the throughput itself may fall where time per sample
grows with the batch, as on a CPU past its caches), the range's top (within
``EXTRAPOLATION_LIMIT``× the largest sample and, when memory bounds it, within the capacity),
and a predicted maximum throughput below a measured one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from skyline_nb.categories import NodeKind
from skyline_nb.export.units import format_bytes, format_ms
from skyline_nb.models.performance import EXTRAPOLATION_LIMIT, PerformanceModels
from skyline_nb.report import Node, Report

UNTRACKED_NOISE_SHARE = 0.25
UNTRACKED_NOISE_MS = 0.05
# Each op timed from Python carries dispatch cost that the plain iteration does not spend
# (measured 3.6–6 µs an op node on a 2-core machine; BENCHMARKS.md, "Trustworthy numbers").
DISPATCH_MS_PER_OP_NODE = 0.008
ROUNDING = 1e-9


def impossible_values(report: Report) -> list[str]:
    """What ``report`` shows that cannot be true; empty for an honest report."""
    return [*_headline(report), *_tree(report), *_models(report)]


def untracked_floor(report: Report) -> float:
    """The most negative untracked time (ms) that is still measurement noise or the known
    dispatch cost of the ops timed one by one (tiny models: 40 ops of a 0.3 ms iteration)."""
    ops = sum(node.kind == NodeKind.OP for node in report.tree.walk())
    return -max(UNTRACKED_NOISE_SHARE * report.iteration_ms, UNTRACKED_NOISE_MS,
                DISPATCH_MS_PER_OP_NODE * ops)


def _above(value: float, limit: float) -> bool:
    """``value > limit`` beyond float rounding."""
    return value > limit + ROUNDING * max(abs(value), abs(limit), 1e-12)


def _headline(report: Report) -> Iterator[str]:
    measured = [("iteration time", report.iteration_ms), ("throughput", report.throughput),
                ("peak memory", report.peak_bytes)]
    if report.one_thread is not None:
        measured.append(("time at one thread", report.one_thread.one_thread_ms))
    for name, value in measured:
        if not (math.isfinite(value) and value > 0):
            yield f"the measured {name} is {value}"
    if report.untracked_ms < untracked_floor(report):
        yield (f"untracked time is {format_ms(report.untracked_ms)}, beyond the noise "
               f"({format_ms(untracked_floor(report))} for a {format_ms(report.iteration_ms)} "
               "iteration)")


def _breakdown_total(report: Report) -> float:
    """The time breakdown's root total as the widget draws it (js/src/tree.js)."""
    root = report.tree
    has_untracked = any(c.kind == NodeKind.UNTRACKED for c in root.children)
    return root.total_ms + (0.0 if has_untracked else report.untracked_ms)


def _tree(report: Report) -> Iterator[str]:
    total = _breakdown_total(report)
    # Trees store times rounded to the microsecond's thousandth; sums may differ by that.
    if abs(total - report.iteration_ms) > 1e-6 * max(1.0, report.iteration_ms):
        yield (f"the time breakdown adds up to {format_ms(total)}, not the iteration time "
               f"{format_ms(report.iteration_ms)} the header shows")
    floor = untracked_floor(report)
    for node in report.tree.walk():
        lowest = floor if node.kind == NodeKind.UNTRACKED else 0.0
        if node.kind == NodeKind.UNTRACKED and node.forward_flops + node.backward_flops:
            yield (f"the untracked time (no op's) counts {node.forward_flops + node.backward_flops}"
                   " FLOPs")
        for phase, ms in (("forward", node.forward_ms), ("backward", node.backward_ms or 0.0)):
            if not (math.isfinite(ms) and ms >= lowest):
                label = node.path or node.name
                yield f"{node.kind} {label!r} has a {phase} time of {format_ms(ms)}"
        parent_ms = total if node is report.tree else node.total_ms
        for child in node.children:
            yield from _larger_than_parent(node, child, parent_ms)


def _larger_than_parent(parent: Node, child: Node, parent_ms: float) -> Iterator[str]:
    where = f"{child.kind} {child.path!r} in {parent.name!r}"
    if _above(child.total_ms, parent_ms):
        yield (f"{where} takes {format_ms(child.total_ms)}, more than its parent's "
               f"{format_ms(parent_ms)}")
    if _above(child.activation_bytes, parent.activation_bytes):
        yield (f"{where} saves {format_bytes(child.activation_bytes)} of activations, more than "
               f"its parent's {format_bytes(parent.activation_bytes)}")
    for field, name in (("weight_bytes", "weights"), ("grad_bytes", "gradients"),
                        ("peak_grad_bytes", "gradients at the peak")):
        if _above(getattr(child, field), getattr(parent, field)):
            yield (f"{where} holds {format_bytes(getattr(child, field))} of {name}, more than "
                   "its parent")


def _models(report: Report) -> Iterator[str]:
    models = report.models
    if models is None:
        return
    measured = [report.throughput, *(1000.0 * s.batch_size / s.iteration_ms
                                     for s in report.samples if s.iteration_ms > 0)]
    best = models.max_throughput
    if best is not None and (not math.isfinite(best) or any(_above(t, best) for t in measured)):
        yield (f"the predicted maximum throughput {best:.6g} samples/s is below a measured "
               f"{max(measured):.6g} samples/s")
    if models.can_manipulate:
        yield from _drag_range(report, models)


def _drag_range(report: Report, models: PerformanceModels) -> Iterator[str]:
    bottom, top = models.min_batch_size(), models.max_batch_size()
    largest = max((s.batch_size for s in report.samples), default=report.batch_size)
    if top > EXTRAPOLATION_LIMIT * largest:
        yield (f"the drag reaches batch size {top}, beyond {EXTRAPOLATION_LIMIT}× the largest "
               f"measured {largest}")
    if top < max(largest, report.batch_size):
        yield f"the drag stops at batch size {top}, below the measured {largest}"
    smallest = min((s.batch_size for s in report.samples), default=report.batch_size)
    if bottom > min(smallest, report.batch_size):
        yield f"the drag starts at batch size {bottom}, above the measured {smallest}"
    peak = models.predict_peak_bytes(top)
    if models.memory_bound and _above(peak, models.capacity_bytes):
        yield (f"the predicted peak at batch size {top} ({format_bytes(peak)}) exceeds the "
               f"capacity ({format_bytes(models.capacity_bytes)})")
    for batch in (bottom, top):
        ms = models.predict_iteration_ms(batch)
        values = (ms, models.predict_throughput(batch), models.predict_peak_bytes(batch))
        if not all(math.isfinite(v) and v > 0 for v in values):
            yield (f"at batch size {batch} the models predict {ms} ms, {values[1]} samples/s "
                   f"and {values[2]} bytes")
    best = models.max_throughput
    for batch in models.turns(top):  # the throughput is monotone between these
        throughput = models.predict_throughput(batch)
        if best is not None and _above(throughput, best):
            yield (f"the maximum throughput shown ({best:.6g} samples/s) is below the "
                   f"{throughput:.6g} samples/s predicted at batch size {batch:g}")
    knee = models.knee_batch_size
    if knee is not None and not bottom <= knee <= top:
        yield f"the knee at batch size {knee} is outside the drag range [{bottom}, {top}]"
    if models.knee_range is not None:
        low, high = models.knee_range
        if knee is None or not bottom <= low <= knee <= (top if high is None else high) <= top:
            yield (f"the knee's range {low}–{high} does not hold the knee ({knee}) within the "
                   f"drag range [{bottom}, {top}]")

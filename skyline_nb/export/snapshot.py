"""A static picture of a report: headline numbers plus inline SVG bars, as one HTML fragment.

The magic displays it as its own ``text/html`` output right after the widget, so viewers that
cannot run the widget (GitHub, nbconvert — which renders a saved widget view through a CDN
script, i.e. nothing offline — and notebooks reopened without widget state) still show the
profile. The widget's stylesheet hides the ``.skyline-nb-snapshot`` output wherever the widget
renders; where it cannot (the kernel is gone and no widget state was saved, so JupyterLab finds no
model for it), the snapshot's own style hides the widget output's "Error displaying widget" in
its place and the snapshot stands alone, saying how to get the live widget back. It needs
nothing: no script, no font, no network. Every user string (module names,
device names) passes through ``html.escape``. The memory bar draws the categories the report
carries, each in its own colour and with its own label.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from skyline_nb.categories import Categories, NodeKind
from skyline_nb.export.units import format_bytes, format_ms, format_throughput
from skyline_nb.models.curve import Curve
from skyline_nb.models.performance import PerformanceModels

WIDTH = 560
BAR_H = 18
# One hue per slot, readable on light and dark backgrounds.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")

# (label, value, colour or None for the next palette slot)
Segment = tuple[str, float, str | None]

# JupyterLab and Notebook 7 mark a widget output that found no model (or could not render) with
# ``jupyter-widgets`` on the output node itself, which a rendered widget never has; such an
# output right before a snapshot is hidden. So is the widget's ``text/plain`` headline, which
# nbconvert's HTML (and a front end without widgets) shows in its place: the snapshot says it
# again (a walkthrough read the headline twice). Only trusted outputs keep a <style>: an
# untrusted notebook shows no widget view in the first place.
_HIDE_STAND_INS = (
    "<style>.jp-OutputArea-child:is(:has(> .jp-OutputArea-output.jupyter-widgets), "
    ":has(> .jp-OutputArea-output[data-mime-type='text/plain']))"
    ":has(+ .jp-OutputArea-child .skyline-nb-snapshot) { display: none; }</style>"
)
RERUN = "Static snapshot: re-run this cell to get the live widget."


def snapshot_html(report: dict[str, Any], error: str = "") -> str:
    """The whole static view of a ``Report.to_dict()`` (and of the widget's error, if any)."""
    problem = (
        f'<div style="color:#c62828;white-space:pre-wrap">{escape(error)}</div>' if error else ""
    )
    if not report or "batch_size" not in report:
        return (f'<div class="skyline-nb-snapshot">{_HIDE_STAND_INS}{problem}'
                f"<div>skyline_nb: no profile yet. {RERUN}</div></div>")
    categories = Categories.from_json(report.get("categories"))
    parts = [
        '<div class="skyline-nb-snapshot" style="font-family:sans-serif;font-size:13px;'
        f'max-width:{WIDTH}px">' + _HIDE_STAND_INS,
        f"<div><b>Skyline profile</b> on {escape(report['device']['name'])} "
        f"({escape(report['device']['kind'])})</div>",
        "<div>" + escape(headline(report)) + "</div>",
        _warnings(report),
        problem,
        _key_bars(report),
        _stacked("Run time", _time_segments(report, categories), format_ms),
        _stacked("Memory", _memory_segments(categories), format_bytes),
        f"<div style='color:#888'>{RERUN}</div>",
        "</div>",
    ]
    return "\n".join(parts)


def _warnings(report: dict[str, Any]) -> str:
    """The profiler's notes on its measurement, as the widget lists them (escaped text)."""
    items = "".join(f"<li>{escape(str(w))}</li>" for w in report.get("warnings") or [])
    if not items:
        return ""
    return f'<ul style="margin:4px 0;padding-left:18px;color:#b35900">{items}</ul>'


def headline(report: dict[str, Any]) -> str:
    """One line of the numbers a user looks at first (also the text/plain summary)."""
    models = report.get("models") or {}
    one = (report.get("one_thread") or {}).get("one_thread_ms")  # timed on a busy machine
    at_one = f" ({format_ms(one)} at 1 thread)" if one else ""
    text = (
        f"batch {report['batch_size']:,} · {format_ms(report['iteration_ms'])}/iteration{at_one} · "
        f"{format_throughput(report['throughput'])} · peak {format_bytes(report['peak_bytes'])}"
    )
    if models.get("max_throughput"):
        best = format_throughput(models["max_throughput"])
        text += f" · max {best}{_max_where(models, report.get('samples') or [])}"
    return text


def _max_where(models: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """How the maximum is known, as the widget's header says it: ", predicted at batch N"
    with ", the drag's end" where N is the range's top (the throughput still grows there) and
    " (extrapolated)" outside the measured sizes; ", measured at batch N" where a sample's is
    the best."""
    try:
        performance = PerformanceModels.from_dict(models)
        at = performance.max_throughput_batch_size
    except (KeyError, TypeError, ValueError):  # a report from before the models had a range
        return ""
    if at is None:
        if not performance.max_throughput:
            return ""
        timed = [s for s in samples if s.get("iteration_ms", 0) > 0]
        best = max(timed, key=lambda s: s["batch_size"] / s["iteration_ms"], default=None)
        return ", measured" + ("" if best is None else f" at batch {best['batch_size']:,}")
    low, high = performance.measured_range or (1, math.inf)
    beyond = not low <= round(at) <= high
    end = ", the drag's end" if round(at) == performance.max_batch_size() else ""
    return f", predicted at batch {round(at):,}{end}{' (extrapolated)' if beyond else ''}"


def _key_bars(report: dict[str, Any]) -> str:
    models = report.get("models") or {}
    rows = []
    max_tp = models.get("max_throughput")
    if max_tp:
        measured = format_throughput(report["throughput"])
        rows.append(("Throughput", report["throughput"] / max_tp,
                     f"{measured} of max {format_throughput(max_tp)}"))
    top, of = _memory_top(report)
    if top > 0:
        rows.append(("Peak memory", report["peak_bytes"] / top,
                     f"{format_bytes(report['peak_bytes'])} of {of}"))
    svg = [f'<svg width="{WIDTH}" height="{len(rows) * (BAR_H + 8)}" role="img">']
    for i, (label, fraction, text) in enumerate(rows):
        y = i * (BAR_H + 8)
        width = max(0.0, min(1.0, fraction)) * (WIDTH - 120)
        svg += [
            f'<text x="0" y="{y + 13}" fill="currentColor">{escape(label)}</text>',
            f'<rect x="110" y="{y}" width="{WIDTH - 120}" height="{BAR_H}" fill="#8883"/>',
            f'<rect x="110" y="{y}" width="{width:.1f}" height="{BAR_H}" fill="{PALETTE[0]}">'
            f"<title>{escape(text)}</title></rect>",
            f'<text x="114" y="{y + 13}" fill="currentColor">{escape(text)}</text>',
        ]
    svg.append("</svg>")
    return "".join(svg)


def _memory_top(report: dict[str, Any]) -> tuple[float, str]:
    """The memory bar's top and its words: the device's capacity where it bounds the batch (a
    GPU, a budget), else the predicted peak at the largest batch the drag reaches (the
    machine's RAM is no bound a user means), else the capacity."""
    models = report.get("models") or {}
    memory, largest = models.get("memory"), models.get("max_batch_size")
    if models.get("memory_bound") is False and memory and largest:
        top = Curve.from_dict(memory)(largest)
        if top >= report["peak_bytes"]:
            return top, f"{format_bytes(top)} predicted at batch {largest}"
    capacity = report["device"].get("capacity_bytes") or 0
    return capacity, format_bytes(capacity)


def _time_segments(report: dict[str, Any], categories: Categories) -> list[Segment]:
    """The root's children; a node that stands for a category (the optimizer, the untracked
    remainder) takes that category's colour, as in the widget."""
    colors = {spec.node_kind: spec.color for spec in categories.specs if spec.node_kind}
    segments: list[Segment] = []
    for child in report["tree"]["children"]:
        total = child["forward_ms"] + (child["backward_ms"] or 0.0)
        segments.append((_label(child), total, colors.get(child.get("kind"))))
    return segments


def _label(node: dict[str, Any]) -> str:
    """The widget's name for a node (``nodeLabel`` in js/src/tree.js) plus its class.

    Class names alone are ambiguous ("Linear", "Linear" for an MLP); the attribute name is what
    the user wrote and what the widget shows, so the snapshot reads the same: "0 (Linear)".
    """
    name = node.get("name") or "model"
    path = node.get("path") or ""
    if node.get("kind") != NodeKind.MODULE or not path:
        return name
    parts = path.split(".")
    short = ".".join(parts[-2:]) if parts[-1].isdigit() and len(parts) > 1 else parts[-1]
    return name if short == name else f"{short} ({name})"


LEGEND_ENTRIES = 8  # the largest parts by size; the bar's tooltips name every one


def _memory_segments(categories: Categories) -> list[Segment]:
    """One segment per category the report carries, in its colour, labelled as it says."""
    return [(spec.label, float(categories[spec.key]), spec.color) for spec in categories.specs]


def _stacked(title: str, segments: list[Segment], fmt: Any) -> str:
    """A stacked bar, largest first; negative values (untracked) are listed, not drawn."""
    drawn = sorted((s for s in segments if s[1] > 0), key=lambda s: -s[1])
    total = sum(value for _, value, _ in drawn) or 1.0
    x = 0.0
    rects = []
    for i, (name, value, fixed) in enumerate(drawn):
        width = value / total * WIDTH
        color = escape(fixed or PALETTE[i % len(PALETTE)])
        label = f"{name}: {fmt(value)} ({100 * value / total:.1f} %)"
        rects.append(
            f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="{BAR_H}" fill="{color}">'
            f"<title>{escape(label)}</title></rect>"
        )
        x += width
    legend = " · ".join(
        f"{escape(name)} {escape(fmt(value))}" for name, value, _ in sorted(
            (s for s in segments if s[1] != 0), key=lambda s: -abs(s[1]))[:LEGEND_ENTRIES]
    )
    return (
        f"<div style='margin-top:6px'><b>{escape(title)}</b></div>"
        f'<svg width="{WIDTH}" height="{BAR_H}" role="img">{"".join(rects)}</svg>'
        f"<div style='font-size:12px'>{legend}</div>"
    )

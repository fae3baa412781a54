"""SkylineWidget: the anywidget that renders a Report's JSON. Traits only; no profiling here.

The front end (``js/src``, bundled into ``static/widget.js``) draws everything from the
``report`` trait, so a saved notebook or the offline HTML page renders without a kernel.
"""

from __future__ import annotations

import base64
import json
import pathlib
import zlib
from typing import Any

import anywidget
import traitlets

_STATIC = pathlib.Path(__file__).parent / "static"

# The report trait travels (to the front end, and into a notebook's saved widget state) as one
# string: ``COMPACT_PREFIX`` + base64 of the zlib-deflated JSON, which ``js/src/compact.js``
# inflates. A nested dict would be stored indented in the .ipynb, ~780 bytes per op; deflated
# it is about a tenth (BENCHMARKS.md, saved widget state).
COMPACT_PREFIX = "deflate;base64,"


def report_to_wire(report: dict[str, Any], _widget: Any = None) -> str | dict[str, Any]:
    """``report`` as the front end receives it (an empty report stays ``{}``)."""
    if not report:
        return {}
    text = json.dumps(report, separators=(",", ":"), allow_nan=False)
    return COMPACT_PREFIX + base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode()


def report_from_wire(value: Any, _widget: Any = None) -> dict[str, Any]:
    """The inverse of ``report_to_wire`` (a plain dict is taken as is)."""
    if isinstance(value, str) and value.startswith(COMPACT_PREFIX):
        data = zlib.decompress(base64.b64decode(value[len(COMPACT_PREFIX):]))
        return json.loads(data.decode("utf-8"))
    return dict(value or {})


class SkylineWidget(anywidget.AnyWidget):
    """Interactive view of one profiled training iteration.

    Traits:
        report: the Report as ``Report.to_dict()`` (empty while nothing was profiled yet); sent
            compact (``report_to_wire``).
        status: progress text while the kernel profiles ("" when idle).
        error: a readable error to show instead of (or above) the report ("" when none).
        selected_batch_size: set by the front end when a drag ends; None before any drag.
        written_batch_size: set by the front end when it wrote a batch size into the source
            cell itself; None while it has not. The kernel writes a drag into the cell at its
            next ``%%skyline`` run only where no front-end path did (``cellbody.pending_edit``):
            an edit the front end made and the user undid stays undone.
        edit_target: where the batch-size literal lives ({cell_id, start_utf16, end_utf16,
            value, text}: ``text`` is the literal as written, ``2_000_000``), or {} when the
            source cannot be edited (the reason is in ``report.source``).
        measurement: the latest "Measure at N" result ({batch_size, iteration_ms, peak_bytes,
            throughput, steps, spread, waited}: how many steps were timed, (Q3 − Q1) /
            median of them, whether most waited for a busy CPU), shown beside the
            prediction made before it ({predicted_ms, predicted_peak_bytes}), and whether it
            joined the report's samples ({joined, curve_kept, not_joined}: ``measurement.py``;
            other_model: the model measured has other parameters, nothing to compare);
            {} before any.
        live: true when a kernel-side ``LiveProfile`` serves this widget (Re-profile, Measure at
            N, locating the literal: ``skyline_nb.live``); the front end hides those buttons
            otherwise.
    """

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    report = traitlets.Dict().tag(sync=True, to_json=report_to_wire,
                                  from_json=report_from_wire)
    status = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    selected_batch_size = traitlets.Int(None, allow_none=True).tag(sync=True)
    written_batch_size = traitlets.Int(None, allow_none=True).tag(sync=True)
    edit_target = traitlets.Dict().tag(sync=True)
    measurement = traitlets.Dict().tag(sync=True)
    live = traitlets.Bool(False).tag(sync=True)

    def __init__(self, report: Any = None, **kwargs: Any) -> None:
        if report is not None and not isinstance(report, dict):
            report = report.to_dict()
        super().__init__(report=report or {}, **kwargs)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget view plus a ``text/plain`` summary of the headline numbers.

        The static picture for viewers without widgets is a separate output
        (``skyline_nb.export.snapshot``): nbconvert prefers the widget view whenever the widget
        state is saved, so a ``text/html`` inside this bundle would never be shown there.
        """
        from skyline_nb.export.snapshot import headline

        bundle = super()._repr_mimebundle_(**kwargs)  # anywidget: (data, metadata)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        if self.report:
            data["text/plain"] = "Skyline profile: " + headline(self.report)
        elif self.error:
            data["text/plain"] = "Skyline profile failed: " + self.error
        return data, metadata

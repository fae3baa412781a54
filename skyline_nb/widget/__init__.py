"""SkylineWidget: the anywidget that renders a Report's JSON. Traits only; no profiling here.

The front end (``js/src``, bundled into ``static/widget.js``) draws everything from the
``report`` trait, so a saved notebook or the offline HTML page renders without a kernel.
"""

from __future__ import annotations

import pathlib
from typing import Any

import anywidget
import traitlets

_STATIC = pathlib.Path(__file__).parent / "static"


class SkylineWidget(anywidget.AnyWidget):
    """Interactive view of one profiled training iteration.

    Traits:
        report: the Report as ``Report.to_dict()`` (empty while nothing was profiled yet).
        status: progress text while the kernel profiles ("" when idle).
        error: a readable error to show instead of (or above) the report ("" when none).
        selected_batch_size: set by the front end when a drag ends; None before any drag.
        edit_target: where the batch-size literal lives ({cell_id, start, end, value, ...}),
            or {} when the source cannot be edited (the reason is then in ``report.source``).
        measurement: the latest "Measure at N" result ({batch_size, iteration_ms, peak_bytes,
            throughput}), shown beside the prediction; {} before any.
    """

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    report = traitlets.Dict().tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    selected_batch_size = traitlets.Int(None, allow_none=True).tag(sync=True)
    edit_target = traitlets.Dict().tag(sync=True)
    measurement = traitlets.Dict().tag(sync=True)

    def __init__(self, report: Any = None, **kwargs: Any) -> None:
        if report is not None and not isinstance(report, dict):
            report = report.to_dict()
        super().__init__(report=report or {}, **kwargs)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget view, plus a static snapshot for viewers that cannot run widgets.

        ``text/html`` (inline SVG, no script) is what GitHub and nbconvert show;
        ``text/plain`` is the headline numbers. Displayed through a display handle, the magic
        re-sends this bundle once the report is in, so the saved output is never stale.
        """
        from skyline_nb.export.snapshot import headline, snapshot_html

        bundle = super()._repr_mimebundle_(**kwargs)  # anywidget: (data, metadata)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        if self.report:
            data["text/plain"] = "Skyline profile: " + headline(self.report)
        elif self.error:
            data["text/plain"] = "Skyline profile failed: " + self.error
        data["text/html"] = snapshot_html(self.report)
        return data, metadata

"""One self-contained, offline HTML page that renders a report with the real widget, read-only.

The widget bundle and the report are inlined; the bundle is imported from a ``blob:`` URL so
the page works from ``file://`` with no server and no network. A small stand-in for the
anywidget model (``get``/``set``/``on``/``save_changes``/``send``) serves the traits from the
report; with no kernel there is no cell to edit, so the edit target is empty and the page says
so. Hover, drill-down and drag predictions all work: the widget computes them in JavaScript
from the fitted coefficients stored in the report.

The page is what gets mailed around, so the report is stored compact: every distinct stack
frame once (a report repeats the same few frames on hundreds of ops and weights), expanded back
into the exact ``Report.to_dict()`` by the page before the widget sees it.
"""

from __future__ import annotations

import base64
import json
from html import escape
from pathlib import Path
from typing import Any

STATIC = Path(__file__).resolve().parent.parent / "widget" / "static"

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
  content="default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline';
  img-src data:">
<title>{title}</title>
<style>
body {{ margin: 24px; background: #fff; color: #222; font-family: system-ui, sans-serif; }}
.skyline-page-note {{ color: #666; font-size: 12px; margin-bottom: 12px; }}
/* The widget takes its dark fallbacks from the OS's scheme; the page must follow it too. */
@media (prefers-color-scheme: dark) {{
  body {{ background: #1e1e1e; color: #e8e8e8; }}
  .skyline-page-note {{ color: #9a9a9a; }}
}}
{css}
</style>
</head>
<body>
<h1 style="font-size:18px">{title}</h1>
<div class="skyline-page-note">Standalone skyline_nb report: hover, drill down and drag the bars to
see predictions. Read-only: this page cannot edit notebook cells.</div>
<div id="skyline-root"></div>
<script type="application/json" id="skyline-report">{report}</script>
<script>
// Undo compact_report(): "frames" lists of indices into the frame table become frame objects.
function skylineExpand(packed) {{
  const table = packed._frames || [];
  const expand = (value) => {{
    if (Array.isArray(value)) return value.map(expand);
    if (value === null || typeof value !== "object") return value;
    const out = {{}};
    for (const [key, item] of Object.entries(value)) {{
      if (key === "_frames") continue;
      out[key] = key === "frames" && Array.isArray(item)
        ? item.map((i) => (typeof i === "number" ? table[i] : i)) : expand(item);
    }}
    return out;
  }};
  return expand(packed);
}}
</script>
<script type="module">
const b64 = document.getElementById("skyline-bundle").textContent.trim();
const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const url = URL.createObjectURL(new Blob([bytes], {{ type: "text/javascript" }}));
const widget = (await import(url)).default;
const state = {{
  report: skylineExpand(JSON.parse(document.getElementById("skyline-report").textContent)),
  status: "", error: "", selected_batch_size: null, edit_target: {{}}, measurement: {{}},
}};
const listeners = new Map();
const model = {{
  get: (name) => state[name],
  set: (name, value) => {{
    state[name] = value;
    for (const cb of listeners.get("change:" + name) || []) cb({{ new: value }});
  }},
  on: (event, cb) => listeners.set(event, [...(listeners.get(event) || []), cb]),
  off: (event, cb) => listeners.set(event, (listeners.get(event) || []).filter((f) => f !== cb)),
  save_changes: () => {{}},
  send: () => {{}},
  standalone: true,
}};
widget.render({{ model, el: document.getElementById("skyline-root") }});
</script>
<script type="application/base64" id="skyline-bundle">{bundle}</script>
</body>
</html>
"""


def _inline_json(data: dict[str, Any]) -> str:
    """JSON that cannot end or confuse its <script> element: every ``<`` is escaped."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def compact_report(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with each distinct stack frame stored once, in ``_frames``.

    Every ``frames`` list (tree nodes, weights) becomes a list of indices into that table; the
    page's ``skylineExpand`` restores the original. Only lists of frame objects are touched, so
    a report without frames passes through unchanged (plus an empty table).
    """
    table: list[dict[str, Any]] = []
    index: dict[str, int] = {}

    def intern(frame: dict[str, Any]) -> int:
        key = json.dumps(frame, sort_keys=True)
        if key not in index:
            index[key] = len(table)
            table.append(frame)
        return index[key]

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        return {
            key: [intern(f) for f in item]
            if key == "frames" and isinstance(item, list) and all(isinstance(f, dict) for f in item)
            else walk(item)
            for key, item in value.items()
        }

    packed = walk(report)
    packed["_frames"] = table
    return packed


def standalone_html(report: dict[str, Any], title: str = "Skyline profile") -> str:
    """The page as a string (``report`` is ``Report.to_dict()``)."""
    bundle = (STATIC / "widget.js").read_text(encoding="utf-8")  # built by `npm run build`
    css_path = STATIC / "widget.css"
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    return _PAGE.format(
        title=escape(title),
        css=css.replace("<", "\\3c "),
        report=_inline_json(compact_report(report)),
        # base64: the bundle's text can hold anything, and a <script> must not see "</".
        bundle=base64.b64encode(bundle.encode("utf-8")).decode("ascii"),
    )


def save_html(report: dict[str, Any], path: Path, title: str = "Skyline profile") -> Path:
    """Write the page to ``path`` (UTF-8) and return it."""
    path = Path(path)
    path.write_text(standalone_html(report, title), encoding="utf-8")
    return path

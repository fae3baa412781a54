"""Smoke tests of the real front ends: the widget renders, the companion extension edits cells.

Each runs in JupyterLab 4 and in Notebook 7 (the `frontend` fixture). The two concerns are kept
apart: the edit test uses no widget, so a broken widget and a broken extension fail different
tests.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

REPORT = {
    "batch_size": 37,
    "device": {"kind": "cpu", "name": "test cpu", "capacity_bytes": 8 << 30},
    "iteration_ms": 12.5,
    "throughput": 2960.0,
    "peak_bytes": 1 << 20,
    "tree": {"id": 0, "name": "model", "path": "", "kind": "root", "forward_ms": 4.0,
             "backward_ms": 8.0, "activation_bytes": 0, "weight_bytes": 0, "grad_bytes": 0,
             "frames": [], "children": []},
}  # fmt: skip
RENDER_CELLS = {
    "widget-cell": "from skyline_nb.widget import SkylineWidget\n"
    f"SkylineWidget(report={json.dumps(REPORT)})"
}

# The decoy comes first and holds the same text at the same offsets, so an edit that ignored the
# cell id (or went to the active cell) would show in the saved notebook.
DECOY_ID, TARGET_ID = "decoy-cell", "target-cell"
PREFIX = "batch_size = 37\n"
EDIT_CELLS = {
    DECOY_ID: PREFIX + "print('decoy', batch_size)",
    TARGET_ID: PREFIX + "print('target', batch_size)",
}
LITERAL_START = PREFIX.index("37")
LITERAL_END = LITERAL_START + 2

DISPATCH = """(node, detail) => {
    const event = new CustomEvent("skyline-edit-source",
        {bubbles: true, cancelable: true, composed: true, detail});
    const notPrevented = node.dispatchEvent(event);
    return {prevented: !notPrevented, result: detail.result ?? null};
}"""


def _run(notebook, name: str, cells: dict[str, str]) -> None:
    notebook.write(f"{name}-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    outputs = notebook.output_text()
    assert "Traceback" not in outputs, outputs


def test_widget_renders_report_summary(notebook):
    _run(notebook, "render", RENDER_CELLS)
    root = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    summary = root.locator('[data-skyline="summary"]')
    expect(summary.filter(has_text=re.compile(r"\b37\b"))).to_have_count(1)
    expect(summary.filter(has_text="test cpu")).to_have_count(1)


def _edit(output, cell_id: str, expected: str, text: str = "64") -> dict[str, Any]:
    detail = {"cellId": cell_id, "start": LITERAL_START, "end": LITERAL_END,
              "text": text, "expected": expected}  # fmt: skip
    return output.evaluate(DISPATCH, detail)


def _sources(saved: dict[str, Any]) -> dict[str, str]:
    return {cell["id"]: "".join(cell["source"]) for cell in saved["cells"]}


def test_extension_edits_source_by_cell_id(notebook):
    _run(notebook, "edit", EDIT_CELLS)
    target = notebook.page.locator(".jp-CodeCell").nth(1)
    output = target.locator(".jp-OutputArea-output")
    expect(output).to_have_text("target 37")

    refused = _edit(output, TARGET_ID, expected="36")
    assert refused["prevented"], refused
    assert refused["result"]["ok"] is False
    assert "changed" in refused["result"]["message"]
    assert _sources(notebook.save()) == EDIT_CELLS

    unknown = _edit(output, "no-such-cell", expected="37")
    assert not unknown["prevented"], "an unknown cell must be left to the widget's fallbacks"
    assert unknown["result"]["ok"] is False

    applied = _edit(output, TARGET_ID, expected="37")
    assert applied["prevented"], applied
    assert applied["result"]["ok"] is True, applied
    edited = EDIT_CELLS[TARGET_ID][:LITERAL_START] + "64" + EDIT_CELLS[TARGET_ID][LITERAL_END:]
    assert _sources(notebook.save()) == {DECOY_ID: EDIT_CELLS[DECOY_ID], TARGET_ID: edited}

    # The edit is one undo step in the cell's editor.
    editor = target.locator(".cm-content")
    expect(editor).to_contain_text("batch_size = 64")
    editor.click()
    notebook.page.keyboard.press("Control+z")
    expect(editor).to_contain_text("batch_size = 37")

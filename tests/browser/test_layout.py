"""The widget's layout in a real JupyterLab, light and dark theme.

Every number sits on one unbroken line (the bars' values and scales), the knee's label lies
beside its track, within the track's height and its own column, the profiler's notes take one
line until opened. Two widgets: the recorded CNN profile, and the same report made hard to lay
out (a knee at 1,792 placed loosely, within 1,500–5,000; a fast model whose throughput runs to
five digits; long notes).

Screenshots of the bars, legend and breakdowns go to test-artifacts/, or to the folder named by
SKYLINE_SCREENSHOTS (`SKYLINE_SCREENSHOTS=docs/screenshots` refreshes the documentation's).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
REPORT_PATH = ROOT / "tests" / "fixtures" / "report_cnn.json"
SHOTS = ROOT / os.environ.get("SKYLINE_SCREENSHOTS", "test-artifacts")

# The notes as the profiler words them (skyline_nb/profiler/session.py), long ones included.
NOTES = [
    "the samples at batch size 64, 128 were timed while other processes kept the CPU busy (their "
    "blocks waited for a CPU), so the time predictions may be off; re-profile when the machine "
    "is quieter",
    "most iterations ran while other processes kept this one waiting for a CPU; much of the "
    "untracked 3.210 ms is that waiting, which falls between the ops timed one by one",
    "the iteration at <b>cell 3</b> returned a NaN/inf loss",
]

# One bar's parts that must each be one line; the knee's label; the notes' closed line.
LAYOUT = """root => {
    const box = (el) => el.getBoundingClientRect();
    const oneLine = (el) => {
        const cs = getComputedStyle(el);
        const line = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.4;
        return el.getClientRects().length === 1 && box(el).height < line * 1.5;
    };
    const problems = [];
    const bad = (what, el) => problems.push(`${what}: ${el.textContent}`);
    for (const bar of root.querySelectorAll('.sk-bar')) {
        const column = box(bar);
        const parts = '.sk-bar-number, .sk-bar-unit, .sk-line, .sk-bar-label';
        for (const el of bar.querySelectorAll(parts)) {
            if (!oneLine(el)) bad('broken', el);
            if (box(el).right > column.right + 0.5) bad('outside its column', el);
        }
        const label = bar.querySelector('.sk-bar-knee-label');
        if (!label) continue;
        const track = box(bar.querySelector('.sk-bar-track'));
        const r = box(label);
        if (!oneLine(label)) bad('broken', label);
        if (r.top < track.top - 0.5 || r.bottom > track.bottom + 0.5) bad('knee beyond', label);
        if (r.left <= track.right) bad('knee label on the track', label);
        if (r.right > column.right + 0.5) bad('knee label outside its column', label);
    }
    const notes = root.querySelector('[data-skyline="warnings"] summary');
    if (notes && !oneLine(notes)) bad('the closed notes take more than one line', notes);
    return problems;
}"""


def _hard_report() -> dict[str, Any]:
    report = json.loads(REPORT_PATH.read_text(encoding="utf-8"))
    models = report["models"]
    models["time"].update(slope=0.02, intercept=1.0)  # 20 µs a sample + 1 ms: ~50,000 samples/s
    # the longest knee label: one the samples place loosely (knee.knee_spread), marked ≈
    models.update(knee_batch_size=1792, knee_range=[1500, 5000], max_batch_size=16384,
                  max_throughput=None)
    models.update(measured_max_throughput=None, capacity_bytes=None, memory_bound=False)
    report["device"]["capacity_bytes"] = None
    report["iteration_ms"] = 1.0 + 0.02 * report["batch_size"]
    report["throughput"] = report["batch_size"] / report["iteration_ms"] * 1000
    report["warnings"] = NOTES
    return report


def _cell(path: Path) -> str:
    return (
        "import json\n"
        "from skyline_nb.widget import SkylineWidget\n"
        f"SkylineWidget(report=json.load(open({str(path)!r}, encoding='utf-8')))"
    )


def _shoot(page, widget, name: str) -> None:
    """The header, notes, bars, legend and breakdowns of one widget (not the code view)."""
    widget.evaluate("el => el.scrollIntoView({block: 'start'})")
    top = widget.bounding_box()
    main = widget.locator(".sk-main").bounding_box()
    clip = {"x": top["x"] - 8, "y": top["y"] - 8, "width": top["width"] + 16,
            "height": main["y"] + main["height"] - top["y"] + 16}  # fmt: skip
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"{name}.png", clip=clip)


def _theme(page, name: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^JupyterLab {name}$")).click()
    light = "true" if name == "Light" else "false"
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'")
    page.wait_for_timeout(500)  # the theme's CSS variables settle


@pytest.mark.parametrize("frontend", ["lab"])
def test_numbers_knee_labels_and_notes_fit_in_light_and_dark(notebook):
    hard = notebook.server.root / "report_hard.json"
    hard.write_text(json.dumps(_hard_report()), encoding="utf-8")
    notebook.write("layout.ipynb", {"cnn-cell": _cell(REPORT_PATH), "hard-cell": _cell(hard)})
    notebook.open()
    notebook.page.set_viewport_size({"width": 1280, "height": 1400})  # notes open in view
    notebook.run_all()
    page = notebook.page
    widgets = page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(widgets).to_have_count(2)
    cnn, hard_widget = widgets.nth(0), widgets.nth(1)
    expect(hard_widget.locator(".sk-bar-knee-label").first).to_have_text("knee ≈1,792")
    expect(hard_widget.locator('[data-skyline="warnings"] li')).to_have_text(NOTES)
    try:
        for theme in ("Light", "Dark"):
            if theme == "Dark":
                _theme(page, theme)
            for widget in (cnn, hard_widget):
                assert widget.evaluate(LAYOUT) == [], theme
            _shoot(page, cnn, f"widget-{theme.lower()}")
            _shoot(page, hard_widget, f"widget-knee-notes-{theme.lower()}")
            hard_widget.locator('[data-skyline="warnings"] summary').click()
            _shoot(page, hard_widget, f"widget-notes-open-{theme.lower()}")
            hard_widget.locator('[data-skyline="warnings"] summary').click()
    finally:
        _theme(page, "Light")  # the server's settings outlive this test

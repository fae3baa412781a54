"""FLOPs and the roofline in a real JupyterLab, light and dark theme (issue 16).

The small report (tests/fixtures/make_reports.py: an MLP whose two Linear layers carry FLOPs, on
a device of 216 GFLOP/s and 52 GB/s): the time tooltip of fc1 says its FLOPs, FLOP/s and share
of the roof, the roofline plot under the breakdowns draws both roofs and one point per Linear,
its labels inside the plot, its colours from the theme; hovering a point links it with the
breakdowns, and hovering a segment lights its point.

Screenshots go to test-artifacts/, or to the folder named by SKYLINE_SCREENSHOTS
(`SKYLINE_SCREENSHOTS=docs/screenshots` refreshes the documentation's roofline-*.png).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from test_layout import ROOT, SHOTS, _cell, _theme

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

REPORT_PATH = ROOT / "tests" / "fixtures" / "report_small.json"
# fc1: 77,070,336 FLOPs in 1.23 ms moving 5.3 MB, under the 216 GFLOP/s roof (roofline.test.js).
FC1 = "FLOPs 77.1 M · 62.7 GFLOP/s · 29.0% of attainable"

# Every text of the plot (ticks, axis titles, roof labels, point names) inside the plot's box.
OUTSIDE = """svg => {
    const box = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].filter((t) => {
        const r = t.getBoundingClientRect();
        return r.left < box.left - 0.5 || r.right > box.right + 0.5
            || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5;
    }).map((t) => t.textContent);
}"""


def _shoot(page, widget, name: str) -> None:
    """The breakdowns, the plot and the tooltip shown over them."""
    boxes = [widget.locator(".sk-breakdowns").bounding_box(),
             widget.locator('[data-skyline="tooltip"]').bounding_box()]
    left = min(b["x"] for b in boxes) - 8
    top = min(b["y"] for b in boxes) - 8
    right = max(b["x"] + b["width"] for b in boxes) + 8
    bottom = max(b["y"] + b["height"] for b in boxes) + 8
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"{name}.png",
                    clip={"x": left, "y": top, "width": right - left, "height": bottom - top})


@pytest.mark.parametrize("frontend", ["lab"])
def test_flops_tooltip_and_roofline_plot_in_light_and_dark(notebook):
    notebook.write("roofline.ipynb", {"small-cell": _cell(REPORT_PATH)})
    notebook.open()
    notebook.run_all()
    page = notebook.page
    widget = page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(widget).to_have_count(1)
    plot = widget.locator('[data-skyline="roofline"]')
    svg = plot.locator("svg")
    points = plot.locator('[data-skyline="roof-point"]')
    tooltip = widget.locator('[data-skyline="tooltip"]')
    time_bar = widget.locator('[data-skyline="breakdown-time"]')
    time_fc1 = time_bar.locator('[data-skyline="segment"][data-node="fc1"]')
    expect(points).to_have_count(2)
    expect(plot.locator(".sk-roof-label")).to_have_text(["216 GFLOP/s", "52 GB/s"])
    strokes = {}
    try:
        for theme in ("Light", "Dark"):
            if theme == "Dark":
                _theme(page, theme)
            assert svg.evaluate(OUTSIDE) == [], theme
            strokes[theme] = plot.locator('line[data-roof="compute"]').evaluate(
                "l => getComputedStyle(l).stroke")
            widget.evaluate("el => el.scrollIntoView({block: 'start'})")
            time_fc1.hover()
            expect(tooltip).to_contain_text(FC1)
            expect(plot.locator(".sk-roof-linked")).to_have_attribute("data-node", "fc1")
            _shoot(page, widget, f"roofline-tooltip-{theme.lower()}")
            plot.locator('[data-skyline="roof-point"][data-node="fc1"]').hover()
            expect(tooltip.locator(".sk-tooltip-title")).to_have_text("fc1 (Linear)")
            expect(tooltip).to_contain_text(FC1)
            expect(time_fc1).to_have_class(re.compile(r"\bsk-linked\b"))
            _shoot(page, widget, f"roofline-plot-{theme.lower()}")
            page.mouse.move(0, 0)
    finally:
        _theme(page, "Light")  # the server's settings outlive this test
    assert strokes["Light"] != strokes["Dark"]  # the roofs follow the theme

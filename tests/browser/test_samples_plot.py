"""The measured samples and the fitted curves in a real JupyterLab, light and dark theme (issue 15).

Two widgets: a small MLP profiled now in the real kernel (tests/notebook_cells.py), and the
recorded CNN profile (tests/fixtures/report_cnn.json, whose fit is good for a drag). Under the
bars of each, the samples plot shows one point per measured batch size in both panels
(iteration time, peak memory), the user's ringed; the fitted curve solid over the samples and
dashed beyond them where the bars can be dragged, else the reason; every text inside its panel,
its colours from the theme. A step of the throughput bar moves the marker.

Screenshots of the recorded profile's bars and plot go to test-artifacts/, or to the folder
named by SKYLINE_SCREENSHOTS (`SKYLINE_SCREENSHOTS=docs/screenshots` refreshes the
documentation's samples-plot-*.png); the fresh profile's (its fit depends on how busy the
machine was) always to test-artifacts/samples-plot-profiled-*.png.

Time: a kernel start, torch import and one small profile: 20-60 s on 2 cores.
"""

from __future__ import annotations

import re

import pytest
from notebook_cells import SMALL_PROFILED_CELL
from playwright.sync_api import expect
from test_layout import REPORT_PATH, ROOT, SHOTS, _cell, _theme
from test_roofline import OUTSIDE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

WIDGET = '.jp-OutputArea [data-skyline="root"]'


def _shoot(page, widget, path) -> None:
    """The bars' column: the bars, the batch size and the samples plot under them."""
    widget.evaluate("el => el.scrollIntoView({block: 'start'})")
    box = widget.locator('[data-skyline="bars"]').bounding_box()
    path.parent.mkdir(parents=True, exist_ok=True)
    clip = {"x": box["x"] - 8, "y": box["y"] - 8, "width": box["width"] + 16,
            "height": box["height"] + 16}  # fmt: skip
    page.screenshot(path=path, clip=clip)


def _check_plot(widget) -> bool:
    """The plot under the bars, its points and either its curves or the reason; True if live."""
    plot = widget.locator('[data-skyline="bars"] [data-skyline="samples-plot"]')
    expect(plot).to_be_visible()
    panels = plot.locator(".sk-samples-panel")
    expect(panels).to_have_count(2)
    counts = [panels.nth(i).locator('[data-skyline="samples-point"]').count() for i in range(2)]
    assert min(counts) >= 3, counts
    expect(plot.locator('[data-skyline="samples-point"][data-user="true"]')).to_have_count(2)
    live = widget.locator('[data-skyline="drag-reason"]').count() == 0
    if live:  # solid over the samples, dashed beyond them
        expect(plot.locator('.sk-samples-curve[data-part="measured"]')).to_have_count(2)
        expect(plot).to_contain_text("extrapolated")
        dash = plot.locator(".sk-samples-extrapolated").first.evaluate(
            "p => getComputedStyle(p).strokeDasharray"
        )
        assert dash not in ("", "none"), dash
    else:  # no drag: the points, no curve, and why
        expect(plot.locator(".sk-samples-curve")).to_have_count(0)
        expect(plot.locator('[data-skyline="samples-reason"]')).to_contain_text("No fitted curve")
    for i in range(2):
        assert panels.nth(i).locator("svg").evaluate(OUTSIDE) == []
    return live


@pytest.mark.parametrize("frontend", ["lab"])
def test_samples_and_fitted_curves_under_the_bars_in_light_and_dark(notebook):
    cells = {
        "load": "%load_ext skyline_nb",
        "profile": SMALL_PROFILED_CELL,
        "recorded": _cell(REPORT_PATH),
    }
    notebook.write("samples.ipynb", cells)
    notebook.open()
    page = notebook.page
    page.set_viewport_size({"width": 1280, "height": 1400})  # the whole column in view
    notebook.run_all()
    widgets = page.locator(WIDGET)
    expect(widgets.first.locator('[data-skyline="breakdown-time"]')).to_be_visible(timeout=120_000)
    expect(widgets).to_have_count(2)
    profiled, recorded = widgets.nth(0), widgets.nth(1)
    _check_plot(profiled)
    # The fresh profile recorded each size's peak per phase: its memory points say which phase
    # held the peak there (the tooltip), its time points do not.
    def titles(metric: str) -> list[str]:
        points = profiled.locator(f'.sk-samples-panel[data-metric="{metric}"] '
                                  '[data-skyline="samples-point"] title')
        return points.all_text_contents()

    phase = r"the model's (forward|backward)|the loss and its backward|the optimizer step"
    assert titles("memory") and all(re.search(rf" measured, the peak in ({phase})$", t)
                                    for t in titles("memory")), titles("memory")
    assert titles("time") and all(t.endswith(" measured") for t in titles("time"))
    assert _check_plot(recorded)  # the recorded fit is good for a drag
    plot = recorded.locator('[data-skyline="samples-plot"]')
    ticks = {}
    try:
        for theme in ("Light", "Dark"):
            if theme == "Dark":
                _theme(page, theme)
            for widget in (profiled, recorded):
                for svg in widget.locator(".sk-samples-svg").all():
                    assert svg.evaluate(OUTSIDE) == [], theme
            ticks[theme] = plot.locator(".sk-samples-tick").first.evaluate(
                "t => getComputedStyle(t).fill"
            )
            _shoot(page, recorded, SHOTS / f"samples-plot-{theme.lower()}.png")
            artifacts = ROOT / "test-artifacts"
            _shoot(page, profiled, artifacts / f"samples-plot-profiled-{theme.lower()}.png")
    finally:
        _theme(page, "Light")  # the server's settings outlive this test
    assert ticks["Light"] != ticks["Dark"]  # the text follows the theme

    # A step of the bar moves the marker with the batch size the bars show.
    marker = plot.locator('[data-skyline="samples-marker"]').first
    before = marker.get_attribute("data-batch")
    recorded.locator('[data-skyline="throughput-bar"]').focus()
    page.keyboard.press("PageUp")
    expect(marker).not_to_have_attribute("data-batch", before)
    batch = recorded.locator('[data-skyline="predicted-batch-size"]').text_content()
    expect(marker).to_have_attribute("data-batch", batch)

"""Memory at the peak in a real JupyterLab with a real profile (issue 14).

The example CNN profiled with ``%skyline``: the memory bar and its legend hold what was alive at
the peak, each category with its bytes and share on hover (the CNN's oneDNN convolutions show
as kernel workspace), a line under the bar says where the peak happened, and a module's
tooltip says how much its forward and backward add. Screenshots, light and dark, go to
``test-artifacts/`` (docs/screenshots/ holds them).

Time: a kernel start, torch import and one profile without predictions: 20-40 s on 2 cores.
"""

from __future__ import annotations

import re

import pytest
from conftest import ARTIFACTS
from playwright.sync_api import expect
from test_layout import _theme

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

CELLS = {
    "providers": "from skyline_nb.examples.cnn import *",
    "profile": "%load_ext skyline_nb\n%skyline --device cpu --no-predict --batch-size 8",
}


def _part(widget, name: str):
    return widget.locator(f'[data-skyline="{name}"]')


@pytest.mark.parametrize("frontend", ["lab"])
def test_the_memory_bar_shows_what_was_alive_at_the_peak(notebook):
    notebook.write("peak.ipynb", CELLS)
    notebook.open()
    notebook.run_all()
    page = notebook.page
    widget = page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(widget).to_have_count(1, timeout=180_000)
    memory = _part(widget, "breakdown-memory")
    legend = memory.locator(".sk-legend-item")
    expect(legend.first).to_be_visible(timeout=60_000)
    names = legend.all_text_contents()
    for name in ("parameters", "activations", "backward temporaries", "kernel workspace"):
        assert name in names, names
    assert "untracked" not in names  # the rest of the peak is "other", and here it is 0
    note = _part(widget, "peak-note")
    expect(note).to_have_text(re.compile(r"^Peak [\d.]+ MiB, in backward of \S+ \(\w+\)$"))

    workspace = memory.locator('[data-skyline="segment"][data-category="kernel_workspace"]')
    workspace.hover()
    tooltip = _part(widget, "tooltip")
    expect(tooltip).to_contain_text("kernel workspace")
    expect(tooltip).to_have_text(re.compile(r"^kernel workspace\s*[\d.]+ (KiB|MiB) · [\d.]+ ?% of"))
    blocks = memory.locator('[data-skyline="segment"][data-node="blocks"]').first
    blocks.hover()
    expect(tooltip).to_contain_text(re.compile(r"adds at most .* in forward · .* in backward"))

    try:
        for theme in ("Light", "Dark"):
            if theme == "Dark":
                _theme(page, theme)
            workspace.hover()
            widget.evaluate("el => el.scrollIntoView({block: 'start'})")
            box = widget.bounding_box()
            main = widget.locator(".sk-main").bounding_box()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=ARTIFACTS / f"peak-memory-{theme.lower()}.png", clip={
                "x": box["x"] - 8, "y": box["y"] - 8, "width": box["width"] + 16,
                "height": main["y"] + main["height"] - box["y"] + 60})
    finally:
        _theme(page, "Light")

    # The gradients alive at the peak are drawn by the module whose parameters hold them, and an
    # opened module shows its own (session 31's walkthrough: it showed its parameters only).
    grads = memory.locator('[data-skyline="segment"][data-category="grads"]')
    expect(grads.first).to_be_visible()
    holder = grads.first.get_attribute("data-node")
    assert holder and holder not in ("", "[untracked]"), holder
    grads.first.dblclick()
    expect(_part(widget, "breadcrumb")).to_have_text(re.compile(re.escape(holder) + "$"))
    opened = grads.and_(memory.locator(f'[data-node="{holder}"]'))
    expect(opened).to_have_count(1)
    expect(opened).to_have_attribute("aria-label", re.compile(r", gradients: [\d.]+ (B|KiB|MiB), "))

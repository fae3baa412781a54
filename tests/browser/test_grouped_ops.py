"""Repeated op calls drawn as groups, in a real JupyterLab with a real profile.

A GRU runs the same few ops once per time step (``addmm``, ``sigmoid_``, ``mul_``... 48 times
each for 48 steps), so its drill level held hundreds of op segments, most of them 1 px wide.
Profiled with ``%skyline`` and drilled into, the GRU shows one segment per op ("addmm × 48")
that can be hovered (the tooltip gives the calls' mean and spread) and double-clicked open to
the calls, with Back and Top as for a module; every segment of both bars is wide enough to
point at. The test leaves screenshots of the grouped drill, light and dark, in
``test-artifacts/`` (docs/screenshots/ holds them, cropped to the widget).

Time: a kernel start, torch import and one profile without predictions: 20-40 s on 2 cores.
"""

from __future__ import annotations

import re

import pytest
from conftest import ARTIFACTS
from playwright.sync_api import expect
from test_layout import _theme

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

STEPS = 48  # time steps: each op of the GRU cell runs once per step
MIN_WIDTH_PX = 3  # narrower than this, a segment cannot be hovered on purpose

PROVIDERS = f"""import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def skyline_model_provider():
    return Tagger()


def skyline_input_provider(batch_size=8):
    return torch.randn(batch_size, {STEPS}, 16), torch.randint(0, 4, (batch_size,))


def skyline_iteration_provider(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def iteration(x, y):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return iteration
"""
CELLS = {
    "providers": PROVIDERS,
    "profile": "%load_ext skyline_nb\n%skyline --device cpu --no-predict",
}


def _part(widget, name: str):
    return widget.locator(f'[data-skyline="{name}"]')


def _segments(widget, breakdown: str, attrs: str = ""):
    return _part(widget, f"breakdown-{breakdown}").locator(f'[data-skyline="segment"]{attrs}')


def _assert_all_hoverable(widget) -> None:
    for breakdown in ("time", "memory"):
        bar = _part(widget, f"breakdown-{breakdown}").locator(".sk-stack")
        widths = bar.locator('[data-skyline="segment"]').evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().width)"
        )
        assert widths and min(widths) >= MIN_WIDTH_PX, (breakdown, sorted(widths)[:5])


def _hover_group(widget, breakdown: str, path: str) -> None:
    _segments(widget, breakdown, f'[data-node="{path}"]').first.hover()
    tooltip = _part(widget, "tooltip")
    expect(tooltip).to_be_visible()
    expect(tooltip.locator(".sk-tooltip-title")).to_contain_text(re.compile(r"\S+ × \d+"))
    expect(tooltip).to_contain_text(re.compile(r"\d+ calls · mean .+ · min .+ – max "))


def _screenshot_hovering(notebook, widget, path: str, name: str) -> None:
    """The viewport (tooltip included) with the widget at its top and the group `path` hovered."""
    widget.evaluate("el => el.scrollIntoView({block: 'start'})")
    _hover_group(widget, "time", path)
    ARTIFACTS.mkdir(exist_ok=True)
    notebook.page.screenshot(path=ARTIFACTS / name)


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_widget_groups_gru_ops_hoverable_and_open_to_calls(notebook, frontend):
    notebook.write("grouped-ops.ipynb", CELLS)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(_part(widget, "breakdown-time")).to_be_visible(timeout=120_000)

    _part(widget, "breakdown-time").locator('[data-node="gru"]').dblclick()
    expect(_part(widget, "breadcrumb")).to_have_text(re.compile(r"gru$"))
    groups = _segments(widget, "time", '[data-kind="group"]')
    expect(groups.first).to_be_visible()
    addmm = _segments(widget, "time", '[data-node="gru/addmm#*"]')
    expect(addmm).to_have_count(1)
    # its spoken label: the name with the calls, the time and the share
    expect(addmm).to_have_attribute("aria-label", re.compile(r"^addmm × \d+: .+ [µm]?s, \d+\.\d%$"))
    # One segment per op of the GRU cell, not one per call: a level a pointer can read.
    assert _segments(widget, "time").count() < STEPS
    _assert_all_hoverable(widget)
    # in memory, the outputs alive at the peak: addmm's (the in-place sigmoid_ makes none)
    _hover_group(widget, "memory", "gru/addmm#*")
    _screenshot_hovering(notebook, widget, "gru/addmm#*", f"grouped-drill-{frontend}-light.png")

    # A group opens like a module: its calls, then Back to the GRU, Top to the model.
    calls = int(re.match(r"addmm × (\d+):", addmm.get_attribute("aria-label"))[1])
    addmm.dblclick()
    expect(_part(widget, "breadcrumb")).to_have_text(re.compile(r"gru›addmm × \d+$"))
    shown = _segments(widget, "time").evaluate_all("els => els.map(e => e.dataset.node)")
    parts = _segments(widget, "time", '[data-kind="other"]')
    assert len(shown) == calls or parts.count() == 1, shown
    # the calls too small to draw are one "other" segment of the group's level
    assert all(re.fullmatch(r"gru/addmm#\d+|gru/addmm#\*/\(other time\)", p) for p in shown), shown
    _part(widget, "back").click()
    expect(_part(widget, "breadcrumb")).to_have_text(re.compile(r"gru$"))
    if frontend != "lab":  # the dark screenshot uses JupyterLab's theme menu
        return

    page = notebook.page
    _theme(page, "Dark")
    try:
        _screenshot_hovering(notebook, widget, "gru/addmm#*", "grouped-drill-dark.png")
    finally:
        _theme(page, "Light")  # the server's settings outlive this test

    _part(widget, "top").click()
    expect(_part(widget, "breadcrumb")).to_have_text("Tagger")

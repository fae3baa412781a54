"""The widget in a real JupyterLab with a kernel: rendering, hover, drill-down, dragging, theme.

The widget is created from a report file (the recorded CNN profile when
``tests/fixtures/report_cnn.json`` exists, else the synthetic ResNet-shaped ``report_large.json``)
so these tests exercise the front end only; profiling has tests of its own. Expected numbers are
computed here from the same report JSON, the way the widget must compute them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from test_layout import _theme

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPORT_PATH = next(
    p for p in (FIXTURES / "report_cnn.json", FIXTURES / "report_large.json") if p.exists()
)
REPORT: dict[str, Any] = json.loads(REPORT_PATH.read_text(encoding="utf-8"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

CELLS = {
    "widget-cell": (
        "import json\n"
        "from skyline_nb.widget import SkylineWidget\n"
        f"w = SkylineWidget(report=json.load(open({str(REPORT_PATH)!r}, encoding='utf-8')))\n"
        "w"
    ),
    "check-cell": "print('selected', w.selected_batch_size)",
}


def _node_time(node: dict[str, Any]) -> float:
    return node["forward_ms"] + (node["backward_ms"] or 0.0)


def _largest_module() -> dict[str, Any]:
    modules = [c for c in REPORT["tree"]["children"] if c["kind"] == "module" and c["children"]]
    return max(modules, key=_node_time)


def _root_time_total() -> float:
    children = REPORT["tree"]["children"]
    total = sum(_node_time(c) for c in children)
    if not any(c["kind"] == "untracked" for c in children):
        total += REPORT.get("untracked_ms", 0.0)
    return total


def _open_widget(notebook) -> Any:
    notebook.write(f"widget-{notebook.frontend}.ipynb", CELLS)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(widget.locator('[data-skyline="throughput-bar"]')).to_be_visible()
    return widget


def _part(widget, name: str):
    return widget.locator(f'[data-skyline="{name}"]')


def _segment(widget, breakdown: str, path: str, category: str | None = None):
    selector = f'[data-skyline="segment"][data-node="{path}"]'
    if category:
        selector += f'[data-category="{category}"]'
    return _part(widget, f"breakdown-{breakdown}").locator(selector)


def _predicted(widget) -> int:
    return int(_part(widget, "predicted-batch-size").text_content())


def _aria_now(widget, bar: str) -> float:
    return float(_part(widget, f"{bar}-bar").get_attribute("aria-valuenow"))


def test_renders_all_parts_with_tooltip_and_linked_highlight(notebook):  # Lab and Notebook 7
    widget = _open_widget(notebook)
    for name in ("throughput-bar", "memory-bar", "predicted-batch-size", "breakdown-time",
                 "breakdown-memory", "back", "top", "breadcrumb", "code-view"):  # fmt: skip
        expect(_part(widget, name)).to_have_count(1)
    expect(_part(widget, "predicted-batch-size")).to_have_text(str(REPORT["batch_size"]))
    expect(_part(widget, "summary").filter(has_text="Batch size")).to_contain_text(
        str(REPORT["batch_size"])
    )
    roots = REPORT["tree"]["children"]
    expect(_part(widget, "breakdown-time").locator('[data-skyline="segment"]')).to_have_count(
        sum(1 for c in roots if _node_time(c) != 0)
    )
    assert _part(widget, "line-marker").count() > 0
    expect(_part(widget, "status")).to_be_hidden()
    expect(_part(widget, "error")).to_be_hidden()

    # Hover: name, value and the % of the iteration, as computed from the report.
    module = _largest_module()
    _segment(widget, "time", module["path"]).hover()
    tooltip = _part(widget, "tooltip")
    expect(tooltip).to_be_visible()
    share = _node_time(module) / _root_time_total()
    expect(tooltip.locator(".sk-tooltip-value")).to_contain_text(f"{share * 100:.1f}% of")
    expect(tooltip.locator(".sk-tooltip-title")).to_contain_text(module["name"])

    # Linked: the same module is marked in the memory breakdown, and its lines in the code.
    linked = _part(widget, "breakdown-memory").locator(".sk-linked")
    expect(linked.first).to_have_attribute("data-node", module["path"])
    assert widget.locator(".sk-code-line.sk-highlight").count() > 0
    widget.locator(".sk-header").hover()
    expect(tooltip).to_be_hidden()
    expect(_part(widget, "breakdown-memory").locator(".sk-linked")).to_have_count(0)


@pytest.mark.parametrize("frontend", ["lab"])
def test_double_click_drills_and_back_top_return(notebook):
    widget = _open_widget(notebook)
    module = _largest_module()
    crumbs = _part(widget, "breadcrumb")
    _segment(widget, "time", module["path"]).dblclick()
    expect(crumbs.locator('[aria-current="location"]')).to_have_attribute(
        "data-path", module["path"]
    )
    child = max((c for c in module["children"] if c["children"]), key=_node_time, default=None)
    expected_paths = sorted(c["path"] for c in module["children"] if _node_time(c) != 0)
    shown = _part(widget, "breakdown-time").locator('[data-skyline="segment"]')
    assert sorted(shown.evaluate_all("els => els.map(e => e.dataset.node)")) == expected_paths
    if child is not None:
        _segment(widget, "time", child["path"]).dblclick()
        expect(crumbs.locator('[aria-current="location"]')).to_have_attribute(
            "data-path", child["path"]
        )
        _part(widget, "back").click()
        expect(crumbs.locator('[aria-current="location"]')).to_have_attribute(
            "data-path", module["path"]
        )
    _part(widget, "top").click()
    expect(crumbs).to_have_text(REPORT["tree"]["name"])
    expect(_part(widget, "back")).to_be_disabled()


def _drag(page, widget, bar: str, steps: int, dy: float, dx: float = 0.0) -> list[int]:
    """Press in a bar, move `steps` times by dy (negative = up), read the prediction each time."""
    handle = _part(widget, f"{bar}-bar")
    handle.scroll_into_view_if_needed()  # running a cell may have scrolled the notebook
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    seen = []
    for i in range(1, steps + 1):
        page.mouse.move(x + dx * i, y + dy * i)
        seen.append(_predicted(widget))
    page.mouse.up()
    return seen


def _run_check_cell(notebook) -> str:
    cell = notebook.page.locator(".jp-CodeCell").nth(1)
    cell.locator(".cm-content").click()
    notebook.page.keyboard.press("Shift+Enter")
    output = cell.locator(".jp-OutputArea-output")
    expect(output).to_have_text(re.compile(r"selected (\d+|None)"))
    notebook.wait_for_kernel_idle()
    return output.inner_text()


@pytest.mark.parametrize("frontend", ["lab"])
def test_dragging_bars_predicts_batch_sizes(notebook):
    widget = _open_widget(notebook)
    page = notebook.page
    start = _predicted(widget)
    memory_before = _aria_now(widget, "memory")

    # Up, and sideways off the bar: pointer capture keeps the drag going.
    seen = _drag(page, widget, "throughput", steps=12, dy=-3, dx=12)
    assert seen == sorted(seen), seen
    assert seen[-1] > start, seen
    assert _aria_now(widget, "memory") > memory_before
    expect(_part(widget, "breakdown-memory")).to_contain_text("predicted")
    # The code view's line markers follow the drag too.
    marker = _part(widget, "line-marker").first
    expect(marker).to_have_attribute("title", re.compile(f"predicted at batch size {seen[-1]}$"))
    ARTIFACTS.mkdir(exist_ok=True)
    marker.scroll_into_view_if_needed()
    widget.locator(".sk-code").screenshot(path=ARTIFACTS / "widget-drag-code.png")
    assert f"selected {seen[-1]}" in _run_check_cell(notebook)

    seen = _drag(page, widget, "memory", steps=12, dy=4)
    assert seen == sorted(seen, reverse=True), seen
    assert seen[-1] < seen[0] or seen[0] == 1, seen
    assert f"selected {seen[-1]}" in _run_check_cell(notebook)


@pytest.mark.parametrize("frontend", ["lab"])
def test_keyboard_steps_the_batch_size(notebook):
    widget = _open_widget(notebook)
    start = _predicted(widget)
    bar = _part(widget, "throughput-bar")
    bar.focus()
    seen = []
    for _ in range(5):
        notebook.page.keyboard.press("ArrowUp")
        seen.append(_predicted(widget))
    assert seen == list(range(start + 1, start + 6)), seen
    memory_up = _aria_now(widget, "memory")
    _part(widget, "memory-bar").focus()
    for _ in range(3):
        notebook.page.keyboard.press("ArrowDown")
    assert _predicted(widget) == start + 2
    assert _aria_now(widget, "memory") < memory_up
    notebook.page.keyboard.press("Enter")
    assert f"selected {start + 2}" in _run_check_cell(notebook)


@pytest.mark.parametrize("frontend", ["lab"])
def test_the_profilers_warnings_show_under_the_header_as_text(notebook):
    """Warnings set from the kernel after the widget is shown appear as a list, HTML as text."""
    warnings = [
        "the samples at batch size 64, 128 were timed while other processes kept the CPU busy",
        "the iteration at <img src=x onerror=alert(1)> returned a NaN/inf loss",
    ]
    cells = {**CELLS, "check-cell": f"w.report = {{**w.report, 'warnings': {warnings!r}}}"}
    notebook.write("widget-warnings.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    items = _part(widget, "warnings").locator("li")
    expect(items).to_have_text(warnings)
    expect(widget.locator("img")).to_have_count(0)
    expect(_part(widget, "throughput-bar")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=ARTIFACTS / "widget-warnings.png")


def _luminance(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", rgb)[:3])

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


@pytest.mark.parametrize("frontend", ["lab"])
def test_dark_theme_is_readable(notebook):
    widget = _open_widget(notebook)
    page = notebook.page
    _theme(page, "Dark")
    try:
        _dark_is_readable(widget, page)
    finally:
        _theme(page, "Light")  # the server's settings outlive this test


def _dark_is_readable(widget, page) -> None:
    """The tooltip shows, and the headline, code and bar values contrast with their background."""
    widget.evaluate("el => el.scrollIntoView({block: 'start'})")
    _segment(widget, "time", _largest_module()["path"]).hover()
    expect(_part(widget, "tooltip")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "widget-dark.png")  # the viewport, tooltip included
    # Text and background differ clearly (WCAG contrast ≥ 4.5) for the headline and the code.
    for selector in (".sk-stat-value", ".sk-code-text", ".sk-bar-value"):
        fg, bg = widget.locator(selector).first.evaluate(
            """el => {
                let node = el, bg = 'rgba(0, 0, 0, 0)';
                while (node && /rgba\\(0, 0, 0, 0\\)|transparent/.test(bg)) {
                    bg = getComputedStyle(node).backgroundColor;
                    node = node.parentElement;
                }
                return [getComputedStyle(el).color, bg];
            }"""
        )
        light, dark = sorted((_luminance(fg), _luminance(bg)), reverse=True)
        assert (light + 0.05) / (dark + 0.05) >= 4.5, (selector, fg, bg)

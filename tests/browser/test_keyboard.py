"""A focused key-metric bar owns its keys in JupyterLab and Notebook 7, and gives them back on Esc.

Both hosts bind the plain arrow keys to notebook commands (move the cell selection); Notebook 7
runs them while the key is captured at the document, before the focused bar sees it. The bar
must move, and the notebook's active cell must stay where it is, until Esc hands focus back.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_widget import CELLS as WIDGET_CELLS
from test_widget import REPORT

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

# The recorded report's widget and the cell that reads its chosen batch size, below a plain
# cell (the one ArrowUp selects once the bar has let go of its keys).
CELLS = {"above-cell": "x = 1", **WIDGET_CELLS}

ACTIVE_CELL = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
    .findIndex((c) => c.classList.contains('jp-mod-active'))"""


def _active_cell(page) -> int:
    return page.evaluate(ACTIVE_CELL)


def test_a_focused_bar_moves_with_the_keys_and_the_cell_selection_does_not(notebook):
    notebook.write(f"keyboard-{notebook.frontend}.ipynb", CELLS)
    notebook.open()
    notebook.run_all()
    page = notebook.page
    widget = page.locator('.jp-OutputArea [data-skyline="root"]')
    bar = widget.locator('[data-skyline="throughput-bar"]')
    batch = widget.locator('[data-skyline="predicted-batch-size"]')
    expect(bar).to_be_visible()
    start = int(REPORT["batch_size"])
    step = max(1, round((start + 1) * 0.1))

    bar.click()  # a press without a move: focus, and the notebook makes the widget's cell active
    expect(bar).to_be_focused()
    expect(batch).to_have_text(str(start))
    cell = _active_cell(page)
    assert cell == list(CELLS).index("widget-cell"), cell
    value = bar.get_attribute("aria-valuenow")

    page.keyboard.press("ArrowUp")
    expect(batch).to_have_text(str(start + 1))
    page.keyboard.press("PageUp")
    expect(batch).to_have_text(str(start + 1 + step))
    page.keyboard.press("ArrowUp")
    expect(batch).to_have_text(str(start + 2 + step))
    assert bar.get_attribute("aria-valuenow") != value
    expect(bar).to_be_focused()
    assert _active_cell(page) == cell  # the notebook never saw the keys

    # Esc gives the keys back: the bar loses focus, its choice is committed, and the next
    # ArrowUp is the notebook's again (the cell above becomes active).
    page.keyboard.press("Escape")
    expect(bar).not_to_be_focused()
    page.keyboard.press("ArrowUp")
    page.wait_for_function(f"({ACTIVE_CELL})() === {cell - 1}")
    expect(batch).to_have_text(str(start + 2 + step))
    check = page.locator(".jp-CodeCell").nth(list(CELLS).index("check-cell"))
    check.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(check.locator(".jp-OutputArea-output")).to_have_text(f"selected {start + 2 + step}")

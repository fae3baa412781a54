"""A profiled notebook saved and opened again in JupyterLab / Notebook 7, its kernel gone.

Without saved widget state (the frontends' default) the widget's output finds no model; the
static snapshot stands in its place, with no "Error displaying widget: model not found" above
it, and says how to get the live widget back. With "Save Widget State Automatically" on, the
saved notebook of a GRU drilled to its ops is measured against its 300 kB budget (the size is
written to ``test-artifacts/saved-sizes.json`` for BENCHMARKS.md).

Time: a kernel start, torch import and one small profile per test: 20-60 s on 2 cores.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import ARTIFACTS, user_settings
from notebook_cells import SMALL_PROFILED_CELL
from playwright.sync_api import expect
from test_grouped_ops import PROVIDERS as GRU_PROVIDERS

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

WIDGET = '.jp-OutputArea [data-skyline="root"]'
SAVED_STATE_BUDGET = 300_000
WIDGET_MANAGER = "@jupyter-widgets/jupyterlab-manager/plugin"


def _profiled(notebook, name: str, cells: dict[str, str]) -> None:
    notebook.write(name, cells)
    notebook.open()
    notebook.run_all()
    expect(notebook.page.locator(WIDGET).locator('[data-skyline="breakdown-time"]')).to_be_visible(
        timeout=120_000)


def test_reopened_without_widget_state_shows_the_snapshot_and_no_error(notebook):
    _profiled(notebook, f"reopen-{notebook.frontend}.ipynb",
              {"load": "%load_ext skyline_nb", "profile": SMALL_PROFILED_CELL})
    saved = notebook.save()
    assert "widgets" not in saved["metadata"]  # the frontends' default: no widget state
    notebook.shut_down_kernel()
    notebook.open()  # the page again, with a new kernel: the widget's model is gone

    page = notebook.page
    failed = page.locator(".jp-OutputArea-output.jupyter-widgets")
    expect(failed).to_have_count(1)  # the widget output gave up on its model...
    expect(failed).to_be_hidden()  # ...and the snapshot after it hides it
    snapshot = page.locator(".skyline-nb-snapshot")
    expect(snapshot).to_be_visible()
    expect(snapshot).to_contain_text("batch 16")
    expect(snapshot).to_contain_text("re-run this cell to get the live widget")
    expect(page.locator(".jp-Notebook")).not_to_contain_text("model not found",
                                                             use_inner_text=True)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"reopened-no-state-{notebook.frontend}.png", full_page=True)


@pytest.mark.parametrize("frontend", ["lab"])
def test_saved_widget_state_of_a_gru_drilled_to_ops_fits_its_budget(notebook):
    with user_settings(notebook.server, WIDGET_MANAGER, {"saveState": True}):
        _profiled(notebook, "gru-state.ipynb", {
            "providers": GRU_PROVIDERS,
            "profile": "%load_ext skyline_nb\n%skyline --device cpu",
        })
        widget = notebook.page.locator(WIDGET)
        widget.locator('[data-skyline="breakdown-time"] [data-node="gru"]').dblclick()
        expect(widget.locator('[data-skyline="breadcrumb"]')).to_have_text(re.compile(r"gru$"))
        saved = notebook.save()
    assert "widgets" in saved["metadata"]
    size = notebook.path.stat().st_size
    ARTIFACTS.mkdir(exist_ok=True)
    record = ARTIFACTS / "saved-sizes.json"
    sizes = json.loads(record.read_text()) if record.exists() else {}
    record.write_text(json.dumps({**sizes, "gru drilled to ops (JupyterLab)": size}, indent=1))
    assert size <= SAVED_STATE_BUDGET

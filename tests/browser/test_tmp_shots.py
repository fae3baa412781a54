import pytest
from tests.browser.test_cell_edit import *  # noqa
from tests.browser.test_cell_edit import _open, _drag, _edit_status, _type_in, _part

OUT = "/tmp/shots"


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_shots(notebook):
    import os
    os.makedirs(OUT, exist_ok=True)
    cells = {"setup": SETUP, "providers": PROVIDERS, "profile": f"%skyline {BUDGET}"}
    widget = _open(notebook, "shots", cells)
    _type_in(notebook, cells, "providers", "start", "# typed before the drag\n")
    up = _drag(notebook, widget, "throughput", -4, lambda b: b > 32)
    _edit_status(widget, "Replaced")
    _part(widget, "bars").scroll_into_view_if_needed()
    notebook.page.screenshot(path=f"{OUT}/{notebook.frontend}-ok.png")
    _part(widget, "edit-status").screenshot(path=f"{OUT}/{notebook.frontend}-ok-status.png")
    notebook.page.locator(".jp-Notebook .jp-Cell").nth(1).screenshot(path=f"{OUT}/{notebook.frontend}-cell.png")
    _type_in(notebook, cells, "providers", "end", "def skyline_input_provider(batch_size=8): return None\n")
    _drag(notebook, widget, "memory", 3, lambda b: b < up)
    _edit_status(widget, "Not edited")
    _part(widget, "bars").scroll_into_view_if_needed()
    notebook.page.screenshot(path=f"{OUT}/{notebook.frontend}-refused.png")
    _part(widget, "edit-status").screenshot(path=f"{OUT}/{notebook.frontend}-refused-status.png")
    widget.screenshot(path=f"{OUT}/{notebook.frontend}-widget-refused.png")

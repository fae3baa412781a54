"""Errors in a real kernel read as the notebook shows the cell: its prompt number, its own line
numbers, the user's frames only (``%tb`` for the rest), each message once."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient
from notebook_cells import mlp_cell

from skyline_nb.demo import widget_reports
from skyline_nb.failures import HIDDEN_NOTE

pytestmark = pytest.mark.integration

RAISING = "%%skyline --device cpu --no-predict\n" + mlp_cell(8, 8, 2, 4).replace(
    "        opt.step()\n", "        opt.step()\n        raise RuntimeError('boom')\n")
RAISE_LINE = RAISING.splitlines().index("        raise RuntimeError('boom')") + 1
SYNTAX = "%%skyline --device cpu\nx = 1\n\ny = (\n"
MISSING = "%skyline -m no_model -i no_input -t no_iteration"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    """The notebook's code cells after a run that goes on past errors, as a user's Run All
    with "continue on errors"; In[N] of the n-th code cell is N."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    sources = ["%load_ext skyline_nb", RAISING, "%tb", SYNTAX, MISSING]
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    folder = tmp_path_factory.mktemp("errors")
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                   store_widget_state=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return notebook


def _text(cell) -> str:
    """Everything a cell's outputs say, as plain text."""
    parts = []
    for output in cell.outputs:
        parts += output.get("traceback", [])
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return ANSI.sub("", "\n".join(parts))


def test_a_raising_iteration_names_the_cell_and_line_as_shown(cells):
    cell = cells.cells[1]
    assert cell.execution_count == 2
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ProfileFailed"
    text = _text(cell)
    assert f"Cell In[2], line {RAISE_LINE}" in text and "RuntimeError: boom" in text
    assert "skyline_nb/" not in text and HIDDEN_NOTE in text  # the user's frames only
    state = cells.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    banners = [m["state"].get("error", "") for m in state.values()]
    assert any(f"at Cell In[2], line {RAISE_LINE}" in b for b in banners)  # the widget's banner
    assert not widget_reports(cells)


def test_tb_shows_the_full_traceback(cells):
    text = _text(cells.cells[2])
    assert "skyline_nb/profiler/" in text and "ProviderError" in text


def test_a_syntax_error_in_a_cell_magic_body_is_on_its_cell_line(cells):
    cell = cells.cells[3]
    assert cell.execution_count == 4
    assert "Cell In[4], line 4" in _text(cell)


def test_missing_providers_are_named_at_once_and_once(cells):
    cell = cells.cells[4]
    text = _text(cell)
    assert all(name in text for name in ("no_model", "no_input", "no_iteration"))
    assert text.count("no_iteration") == 1
    assert not any(o.output_type == "display_data" for o in cell.outputs)  # no error widget

"""Cells that ran before ``%load_ext skyline_nb`` are found in IPython's history.

A real IPython shell runs the cells with history on, as a notebook kernel does; the registry is
then cleared (the ``pre_run_cell`` hook may be installed on this shared shell by another test),
so the cells are known only from the history, exactly as after a late ``%load_ext``. Both
compilers a user meets are exercised: IPython's (code names from the transformed code and the
execution number) and ipykernel's (a temp-file name that hashes the raw text).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ipykernel.compiler import XCachingCompiler
from IPython.core.compilerop import CachingCompiler
from IPython.core.interactiveshell import InteractiveShell
from notebook_cells import mlp_cell

from skyline_nb import cells
from skyline_nb.magic import _cell_of

# Leading blank lines (IPython drops them before compiling) and trailing ones (its history drops
# those): the entry must still give the cell text back and map code lines to cell lines.
PROVIDERS = "\n\n" + mlp_cell(8, 16, 2, 16) + "\n\n"


@pytest.fixture(params=[XCachingCompiler, CachingCompiler], ids=["ipykernel", "ipython"])
def shell(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The shared IPython shell, compiling with the given compiler class for this test."""
    ip = InteractiveShell.instance()
    before = ip.compile
    ip.compile = request.param()
    try:
        yield ip
    finally:
        ip.compile = before
        cells.clear()


def run_before_load(ip: Any, code: str) -> None:
    """Run ``code`` as a notebook cell whose run the registry never saw."""
    result = ip.run_cell(code, store_history=True)
    assert result.success, result.error_in_exec
    cells.clear()


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


@pytest.mark.parametrize("ending", ["", "\n\n\n"])  # notebook cells usually have no final break
def test_history_gives_back_the_cell_that_defined_a_function(shell, ending):
    code = PROVIDERS.rstrip("\n") + ending
    number = shell.execution_count
    run_before_load(shell, code)
    run_before_load(shell, "x = 1")  # a later cell: lookups go by code name, not by recency
    found = cells.register_history(shell)
    provider = shell.user_ns["skyline_input_provider"]
    entry = cells.lookup(provider.__code__.co_filename)
    assert entry is not None and entry in found
    assert entry.cell_id is None
    assert entry.cell_source == code
    line = entry.cell_line(provider.__code__.co_firstlineno)
    assert line == line_of(code, "def skyline_input_provider")
    assert _cell_of(provider).code == entry.cell_source
    # named in messages as IPython's tracebacks name it, by the prompt the user sees: [number]
    assert entry.execution_count == number
    named = shell.compile.format_code_name(provider.__code__.co_filename)
    assert entry.where(line) == f"{' '.join(named)}, line {line}"
    assert entry.where(line) == f"Cell In[{number}], line {line}"


def test_history_keeps_ids_the_hook_reported(shell):
    run_before_load(shell, PROVIDERS)
    cells.register_history(shell)
    name = shell.user_ns["skyline_model_provider"].__code__.co_filename
    assert cells.name_cell(name, "found-by-text").cell_id == "found-by-text"
    assert cells.register_history(shell) == []  # registered already: left alone
    assert cells.name_cell(name, "another").cell_id == "found-by-text"  # never replaced


def test_a_late_profile_learns_the_cell_id_and_then_follows_the_cell(shell):
    """``%skyline`` edits a cell it knows only by text; once the front end writes the id it
    found into ``edit_target``, running that cell again re-profiles the widget."""
    shell.run_line_magic("load_ext", "skyline_nb")
    run_before_load(shell, PROVIDERS)
    cells.register_history(shell)
    assert shell.run_cell("%skyline --no-predict", cell_id="profile-cell").success
    live = shell._skyline_nb_magics.live[-1]
    try:
        source = live.report.source
        assert source.editable and source.cell_id is None
        assert source.code == PROVIDERS
        assert source.code[source.start:source.end] == "16"
        assert live.widget.edit_target["cell_id"] is None

        live.widget.edit_target = {**live.widget.edit_target, "cell_id": "providers-cell"}
        assert live.cell.cell_id == "providers-cell"
        assert live.report.source.cell_id == "providers-cell"
        assert cells.lookup(live.cell.file).cell_id == "providers-cell"

        edited = PROVIDERS.replace("batch_size=16", "batch_size=24")
        assert shell.run_cell(edited, cell_id="providers-cell").success
        assert live.report.batch_size == 24 and live.report.source.cell_id == "providers-cell"
    finally:
        live.widget.close()
        shell._skyline_nb_magics.live.clear()

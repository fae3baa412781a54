"""The body of a ``%%skyline`` cell, run so that its functions map to the cell's own lines.

IPython hands a cell magic its body alone. The whole cell as typed is in the ``cells`` registry
(the ``pre_run_cell`` hook saw it); the body is run as its own code, below the cell's lines up to
the ``%%skyline`` line turned into comments, and under the cell's own execution number, so that
IPython's tracebacks ("Cell In[N], line L"), the profile's frames and the batch-size literal all
number the cell as the notebook shows it. A batch size dragged in this cell's widget that no
front-end path could write into the cell (fallback (c) of DESIGN) is written in here, through
``source.rewrite_batch_size``: the one place where ``set_next_input(replace=True)`` rewrites the
right cell, the one being run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from skyline_nb import cells
from skyline_nb import source as source_edit
from skyline_nb.live import LiveProfile, SourceCell

MAGIC = "%%skyline"


def run_body(shell: Any, body: str, by_cell: Mapping[str, LiveProfile]) -> SourceCell | None:
    """Run ``body`` (after any pending edit) and register it; None when it failed to run.

    ``by_cell`` maps a cell id to the live profile that cell's last run made.
    """
    entries = cells.entries()
    outer = entries[-1] if entries else None
    full = outer.cell_source if outer is not None and outer.cell_source else None
    if full is None or not full.lstrip().startswith(MAGIC):
        full = f"{MAGIC}\n{body}"
    cell_id = (outer.cell_id if outer is not None else None) or running_cell_id(shell)
    prefix = _magic_prefix(full, body)
    previous = by_cell.get(cell_id) if cell_id else None
    if previous is not None:
        edited = pending_edit(previous, full, prefix)
        if edited is not None:
            shell.set_next_input(edited, replace=True)
            full = edited
    # Commented, the lines up to the magic's keep the body on its own lines: nothing is blank
    # at the top for IPython to drop, so the code's line L is the cell's line L.
    code = "".join(f"#{line}" for line in prefix.splitlines(keepends=True))
    code += _with_newline(full)[len(prefix):]
    with _numbered_as(shell, outer):
        if not shell.run_cell(code, store_history=False).success:
            return None
    transformed = shell.transform_cell(code)
    found = next((e for e in reversed(cells.entries()) if e.source == transformed), None)
    if found is None:
        return None
    cells.register(found.code_name, cell_id, transformed, cell_source=full,
                   execution_count=found.execution_count)
    return SourceCell(cell_id, full, found.code_name)


def pending_edit(previous: LiveProfile, full: str, prefix: str) -> str | None:
    """``full`` with the batch size dragged in ``previous``'s widget written in, or None.

    None when nothing was dragged, or the front end already wrote the dragged value into the
    cell (whatever the cell holds now is the user's: an undone edit stays undone), or the
    literal no longer holds the profiled value (a hand edit wins over a drag), or is gone or
    ambiguous, or lies in ``prefix`` (the magic's line).
    """
    report, widget = previous.report, previous.widget
    wanted = widget.selected_batch_size
    if report is None or wanted is None or wanted in (report.batch_size,
                                                      widget.written_batch_size):
        return None
    try:
        edited = source_edit.rewrite_batch_size(
            full, wanted, provider_name=previous.request.input_provider_name(),
            variable=previous.request.batch_size_var, expected_value=report.batch_size)
    except source_edit.SourceEditRefused:
        return None
    return edited if _with_newline(edited).startswith(prefix) else None


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _magic_prefix(full: str, body: str) -> str:
    """The cell text up to and including the ``%%skyline`` line.

    IPython hands the magic a body that always ends with a newline, while the cell as typed
    (``full``) usually does not: compare with the newline added, or every line is off by one.
    """
    whole = _with_newline(full)
    if body and whole.endswith(body):
        return whole[: len(whole) - len(body)]
    first, _, _ = whole.partition("\n")
    return first + "\n"


def running_cell_id(shell: Any) -> str | None:
    """The id of the cell being run: the front end's (in a kernel), else the registry's."""
    kernel = getattr(shell, "kernel", None)
    try:
        found = kernel.get_parent()["metadata"].get("cellId") if kernel is not None else None
    except (AttributeError, KeyError, TypeError):
        found = None
    entries = cells.entries()
    return found or (entries[-1].cell_id if entries else None)


@contextlib.contextmanager
def _numbered_as(shell: Any, outer: cells.CellEntry | None) -> Iterator[None]:
    """Code run meanwhile is numbered as ``outer``, the running cell (In[N], its prompt).

    A cell that stores history has already moved ``execution_count`` on to the next cell's
    number when its code runs; the body would be "Cell In[N+1]" in tracebacks and Out[N+1].
    """
    count = shell.execution_count
    named = shell.compile.format_code_name(outer.code_name) if outer is not None else None
    number = next((n for n in (count - 1, count) if named == ("Cell", f"In[{n}]")), None)
    if number is None:
        yield
        return
    shell.execution_count = number
    try:
        yield
    finally:
        shell.execution_count = count

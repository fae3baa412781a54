"""Which notebook cell a code object came from, and where its lines sit in that cell.

Functions defined in a cell carry ``co_filename`` = the name IPython's compiler gave the cell's
code (``ip.compile.get_code_name(raw_cell, transformed_cell, number)``: a temp-file path under
ipykernel, ``<ipython-input-N-…>`` in plain IPython). The profiler only sees those names in
frames, so this registry maps them back to the cell id the front end knows and to the line the
user sees. Lines can differ from the code's: IPython drops leading blank lines before compiling,
and ``%%skyline`` runs the cell body without its first line; ``first_line`` records the cell line
of the code's line 1 so both cases map right.

The registry is process-wide on purpose: it mirrors IPython's own ``linecache`` entries, which
are process-wide too. It knows nothing about torch.

Example usage::

    register("/tmp/ipykernel_1/123.py", "cell-abc", "def f():\n    pass\n", first_line=2)
    lookup("/tmp/ipykernel_1/123.py").cell_line(1)  # -> 2
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

# Kept bounded: a long notebook session re-runs cells many times, each with a new code name.
_MAX_ENTRIES = 2048


@dataclass(frozen=True)
class CellEntry:
    """One executed piece of cell code.

    ``source`` is the code as compiled (its line 1 is cell line ``first_line``);
    ``cell_source`` is the whole cell as the user sees it, when known (for the code view).
    """

    code_name: str
    cell_id: str | None
    source: str
    first_line: int = 1
    cell_source: str | None = None

    def cell_line(self, code_line: int) -> int:
        """The 1-based line in the cell (as the user sees it) of ``code_line`` of ``source``."""
        return code_line + self.first_line - 1

    def display_source(self) -> str:
        """The text that ``cell_line`` numbers index: the cell if known, else padded code."""
        if self.cell_source is not None:
            return self.cell_source
        return "\n" * (self.first_line - 1) + self.source


_lock = threading.Lock()
_entries: dict[str, CellEntry] = {}


def register(
    code_name: str,
    cell_id: str | None,
    source: str,
    first_line: int = 1,
    *,
    cell_source: str | None = None,
) -> CellEntry:
    """Record that code compiled under ``code_name`` is ``source`` from cell ``cell_id``.

    ``first_line`` is the cell line (1-based) where ``source``'s first line sits: 2 for the body
    of a ``%%skyline`` cell, 1 + the number of dropped leading blank lines otherwise.
    """
    if first_line < 1:
        raise ValueError(f"first_line must be >= 1, not {first_line}")
    entry = CellEntry(code_name, cell_id, source, first_line, cell_source)
    with _lock:
        _entries.pop(code_name, None)
        _entries[code_name] = entry
        while len(_entries) > _MAX_ENTRIES:
            _entries.pop(next(iter(_entries)))
    return entry


def lookup(filename: str) -> CellEntry | None:
    """The entry for a code object's ``co_filename``, or None when it is not a known cell."""
    return _entries.get(filename)


def entries() -> list[CellEntry]:
    """A copy of all entries, oldest first."""
    with _lock:
        return list(_entries.values())


def clear() -> None:
    """Forget every cell (tests; a kernel restart does this implicitly)."""
    with _lock:
        _entries.clear()


def leading_blank_lines(text: str) -> int:
    """How many whitespace-only lines ``text`` starts with (IPython drops them before compiling)."""
    count = 0
    for line in text.splitlines():
        if line.strip():
            break
        count += 1
    return count


def make_pre_run_cell_hook(ip: Any) -> Any:
    """A ``pre_run_cell`` callback for shell ``ip`` that registers each cell as it runs.

    Install with ``ip.events.register("pre_run_cell", hook)``. It computes the code name exactly
    as ``InteractiveShell.run_cell_async`` will (same transformed code, same execution number),
    so functions the cell defines map back to it. Never raises: a registry miss only costs the
    cell id on a frame, while an exception here would break the user's cell.
    """

    def pre_run_cell(info: Any) -> None:
        try:
            raw = info.raw_cell
            if not raw or raw.isspace():
                return
            transformed = getattr(info, "transformed_cell", None)
            if transformed is None:
                transformed = ip.transform_cell(raw)
            # run_cell_async has already advanced execution_count when it stores history.
            number = ip.execution_count - 1 if info.store_history else ip.execution_count
            name = ip.compile.get_code_name(raw, transformed, number)
            offset = leading_blank_lines(raw) - leading_blank_lines(transformed)
            register(
                name,
                getattr(info, "cell_id", None),
                transformed,
                first_line=1 + max(0, offset),
                cell_source=raw,
            )
        except Exception:  # see docstring: never break the user's cell
            return

    return pre_run_cell


def pre_run_cell(info: Any) -> None:
    """The ``pre_run_cell`` hook for the current IPython shell (``get_ipython()``)."""
    from IPython import get_ipython

    ip = get_ipython()
    if ip is not None:
        make_pre_run_cell_hook(ip)(info)

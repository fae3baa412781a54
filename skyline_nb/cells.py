"""Which notebook cell a code object came from, and where its lines sit in that cell.

Functions defined in a cell carry ``co_filename`` = the name IPython's compiler gave the cell's
code (``ip.compile.get_code_name(raw_cell, transformed_cell, number)``: a temp-file path under
ipykernel, ``<ipython-input-N-…>`` in plain IPython). The profiler only sees those names in
frames, so this registry maps them back to the cell id the front end knows and to the line the
user sees. Lines can differ from the code's: IPython drops leading blank lines before compiling,
and ``%%skyline`` runs the cell body without its first line; ``first_line`` records the cell line
of the code's line 1 so both cases map right.

Cells that ran before ``%load_ext skyline_nb`` (README's own flow: providers first, ``%skyline``
later) never passed the hook; ``register_history`` recovers them from IPython's input history,
without their cell ids, which the front end then finds by the cell's exact text.

The registry is process-wide on purpose: it mirrors IPython's own ``linecache`` entries, which
are process-wide too. It knows nothing about torch.

Example usage::

    register("/tmp/ipykernel_1/123.py", "cell-abc", "def f():\n    pass\n", first_line=2)
    lookup("/tmp/ipykernel_1/123.py").cell_line(1)  # -> 2
"""

from __future__ import annotations

import linecache
import threading
from dataclasses import dataclass
from typing import Any

# Kept bounded: a long notebook session re-runs cells many times, each with a new code name.
_MAX_ENTRIES = 2048
# IPython's history drops a cell's trailing line breaks; up to this many are tried back on when
# recovering the exact text (a cell ending in more blank lines than this is not recovered).
_MAX_TRAILING_BREAKS = 8


@dataclass(frozen=True)
class CellEntry:
    """One executed piece of cell code.

    ``source`` is the code as compiled (its line 1 is cell line ``first_line``);
    ``cell_source`` is the whole cell as the user sees it, when known (for the code view);
    ``execution_count`` the run's number, the cell's prompt ``[N]`` (IPython's ``In[N]``).
    """

    code_name: str
    cell_id: str | None
    source: str
    first_line: int = 1
    cell_source: str | None = None
    execution_count: int | None = None

    def cell_line(self, code_line: int) -> int:
        """The 1-based line in the cell (as the user sees it) of ``code_line`` of ``source``."""
        return code_line + self.first_line - 1

    def where(self, line: int) -> str:
        """Line ``line`` of the cell, named as the user sees it: "Cell In[12], line 17"
        (IPython's traceback words for the cell whose prompt reads [12]), else by its id."""
        if self.execution_count is not None:
            return f"Cell In[{self.execution_count}], line {line}"
        return f"cell {self.cell_id or '?'}, line {line}"

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
    execution_count: int | None = None,
) -> CellEntry:
    """Record that code compiled under ``code_name`` is ``source`` from cell ``cell_id``.

    ``first_line`` is the cell line (1-based) where ``source``'s first line sits: 2 for the body
    of a ``%%skyline`` cell, 1 + the number of dropped leading blank lines otherwise.
    """
    if first_line < 1:
        raise ValueError(f"first_line must be >= 1, not {first_line}")
    entry = CellEntry(code_name, cell_id, source, first_line, cell_source, execution_count)
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
            _register_run(name, getattr(info, "cell_id", None), raw, transformed, number)
        except Exception:  # see docstring: never break the user's cell
            return

    return pre_run_cell


def register_history(ip: Any) -> list[CellEntry]:
    """Register the cells shell ``ip`` ran before the hook was installed; ids stay unknown.

    IPython's history keeps each stored cell's raw text (``input_hist_raw``) and transformed
    code (``input_hist_parsed``), both without trailing line breaks, under its execution number;
    ``linecache`` keeps every compiled cell under its code name. A history entry whose code
    name, recomputed as the compiler did, is in ``linecache`` is that cell; under ipykernel the
    name hashes the raw text, so the trailing breaks that make it match give the text back
    exactly as the front end sent it. Cells already registered (with their id) are left alone.

    Known limitations: cells run without history (``store_history=False``) are not found; under
    plain IPython (names built from the transformed code, which always ends in a line break) a
    cell's one final line break is not told apart from none.
    """
    history = getattr(ip, "history_manager", None)
    if history is None:
        return []
    raws, parsed = history.input_hist_raw, history.input_hist_parsed
    found = []
    # latest first: under ipykernel every run of one text has one name, and the function
    # now defined comes from its latest run (the number its prompt shows)
    for number in reversed(range(1, min(len(raws), len(parsed)))):
        for breaks in range(_MAX_TRAILING_BREAKS + 1):
            raw = raws[number] + "\n" * breaks
            transformed = parsed[number] + "\n" * max(breaks, 1)
            name = ip.compile.get_code_name(raw, transformed, number)
            # Every hit is a real run (the name hashes its exact text), so none stops the
            # search: another run of the same text with more breaks has a name of its own.
            if name in linecache.cache and lookup(name) is None:
                found.append(_register_run(name, None, raw, transformed, number))
    return found


def name_cell(code_name: str, cell_id: str) -> CellEntry | None:
    """Give the entry of ``code_name`` the id the front end found for it (by its exact text).

    Only an entry without an id takes one: an id IPython reported is never replaced.
    """
    entry = lookup(code_name)
    if entry is None or entry.cell_id is not None:
        return entry
    return register(code_name, cell_id, entry.source, entry.first_line,
                    cell_source=entry.cell_source, execution_count=entry.execution_count)


def _register_run(name: str, cell_id: str | None, raw: str, transformed: str,
                  number: int) -> CellEntry:
    """Register run ``number`` of a cell: ``raw`` as typed, compiled as ``transformed`` under
    ``name``."""
    offset = leading_blank_lines(raw) - leading_blank_lines(transformed)
    return register(name, cell_id, transformed, first_line=1 + max(0, offset), cell_source=raw,
                    execution_count=number)


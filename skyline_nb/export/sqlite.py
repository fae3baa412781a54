"""Skyline's SQLite reports (``skyline time`` / ``skyline memory``), written from a Report.

The schemas below are Skyline's documented report format, statement for statement, so queries
and tools written against Skyline's files keep working (``PRAGMA user_version`` is 1, the format
version skyline-cli wrote). The Report holds more than these tables can; the mapping decisions:

Run-time report: one ``run_time_entries`` row per operation instance, i.e. every ``op`` node of
the tree in execution (depth-first) order, wherever it sits — module ops and the optimizer's ops
alike (the optimizer's ops have ``backward_ms`` NULL and frames at the ``step()`` call). An
``optimizer`` node without op children (a profiler that only timed ``step()`` as a whole) gets
one row of its own, so optimizer time is never silently dropped. ``untracked`` nodes get no row:
they are not operations, and their time can be negative (instrumented sum above the plain
iteration); the JSON report carries them. ``backward_ms`` is NULL exactly when the node's is None.

Memory report: one ``weight_entries`` row per Report weight (``named_parameters`` names, tied
weights once), one ``activation_entries`` row per op node that saved bytes for backward, and a
``stack_correlation`` row for every entry (as skyline-cli did, weights first), even when it has
no frames. ``misc_sizes`` holds ``peak_usage_bytes`` plus one ``<category>_bytes`` row per Report
category (weights, grads, optimizer, activations, untracked), since the optimizer state has no
other place in these tables.

Frames: Report frames are stored innermost first, so ``ordering`` 0 is the line closest to the
operation (or to the parameter's creation). The profiler keeps only the user's frames (project
files, relative to the root, and notebook cells); they are written as they are, except that a
frame in a notebook cell becomes ``<cell CELL_ID>`` (the stable nbformat cell id, in the spirit
of Python's ``<stdin>``; the kernel's code file name is a temporary path) with the 1-based line
as the user sees it in that cell. A cell whose front end sent no id (its frame's file is then the
kernel's absolute code path) becomes ``<cell CODE_FILE_NAME>``. A relative path escaping the
root (``..``) is dropped, as Skyline kept only frames under the project root.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath

from skyline_nb.export import atomic_output
from skyline_nb.report import Frame, Node, Report

REPORT_FORMAT_VERSION = 1
KINDS = ("time", "memory")
WEIGHT_ENTRY_TYPE = 1
ACTIVATION_ENTRY_TYPE = 2
ENTRY_TYPES = ((WEIGHT_ENTRY_TYPE, "Weight"), (ACTIVATION_ENTRY_TYPE, "Activation"))

RUN_TIME_SCHEMA = (
    """CREATE TABLE run_time_entries (id INTEGER PRIMARY KEY, operation_name TEXT NOT NULL,
  forward_ms REAL NOT NULL, backward_ms REAL)""",
    """CREATE TABLE stack_frames (ordering INTEGER NOT NULL, file_path TEXT NOT NULL,
  line_number INTEGER NOT NULL, entry_id INTEGER NOT NULL, PRIMARY KEY (entry_id, ordering))""",
)

MEMORY_SCHEMA = (
    """CREATE TABLE weight_entries (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
  size_bytes INTEGER NOT NULL, grad_size_bytes INTEGER NOT NULL)""",
    """CREATE TABLE activation_entries (id INTEGER PRIMARY KEY, operation_name TEXT NOT NULL,
  size_bytes INTEGER NOT NULL)""",
    """CREATE TABLE entry_types (entry_type INTEGER PRIMARY KEY, name TEXT NOT NULL)""",
    """CREATE TABLE stack_correlation (correlation_id INTEGER PRIMARY KEY,
  entry_id INTEGER NOT NULL, entry_type INTEGER NOT NULL, UNIQUE (correlation_id, entry_id))""",
    """CREATE UNIQUE INDEX entry_type_and_id ON stack_correlation(entry_type, entry_id)""",
    """CREATE TABLE stack_frames (correlation_id INTEGER NOT NULL, ordering INTEGER NOT NULL,
  file_path TEXT NOT NULL, line_number INTEGER NOT NULL, PRIMARY KEY (correlation_id, ordering))""",
    """CREATE TABLE misc_sizes (key TEXT PRIMARY KEY, size_bytes INT NOT NULL)""",
)


def save_report(report: Report, path: str | Path, kind: str, *, overwrite: bool = False) -> Path:
    """Write the ``kind`` ("time" or "memory") SQLite report of ``report`` to ``path``.

    Atomic (temporary file + rename); raises FileExistsError when ``path`` exists and
    ``overwrite`` is false, ValueError for an unknown kind or a non-finite time.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown SQLite report kind {kind!r}; expected 'time' or 'memory'")
    path = Path(path)
    write = _write_run_time if kind == "time" else _write_memory
    with atomic_output(path, overwrite=overwrite) as temp:
        connection = sqlite3.connect(temp)
        try:
            # The temporary file is thrown away on failure, so no rollback journal is needed.
            connection.execute("PRAGMA journal_mode = MEMORY")
            connection.execute(f"PRAGMA user_version = {REPORT_FORMAT_VERSION:d}")
            with connection:
                write(connection, report)
        finally:
            connection.close()
    return path


def operation_nodes(tree: Node) -> Iterator[Node]:
    """The nodes that become operation rows, in execution order (see the module docstring)."""
    for node in tree.walk():
        if node.kind == "op" or (
            node.kind == "optimizer" and not any(c.kind == "op" for c in node.walk())
        ):
            yield node


def frame_file_path(frame: Frame) -> str | None:
    """The ``file_path`` written for ``frame``, or None when it lies outside the project."""
    if frame.cell_id is not None:
        return f"<cell {frame.cell_id}>"
    if frame.file.startswith("<"):  # already a pseudo file name (e.g. <ipython-input-3-…>)
        return frame.file
    posix = PurePosixPath(frame.file.replace("\\", "/"))
    if posix.is_absolute() or PureWindowsPath(frame.file).drive:
        return f"<cell {posix.name}>"  # project files are relative: this is an id-less cell
    if ".." in posix.parts:
        return None
    return posix.as_posix()


def project_frames(frames: Iterable[Frame]) -> list[tuple[int, str, int]]:
    """``(ordering, file_path, line_number)`` for the frames kept, ordering from 0 without gaps."""
    kept = [(path, frame.line) for frame in frames if (path := frame_file_path(frame)) is not None]
    return [(ordering, path, line) for ordering, (path, line) in enumerate(kept)]


def _write_run_time(connection: sqlite3.Connection, report: Report) -> None:
    for statement in RUN_TIME_SCHEMA:
        connection.execute(statement)
    for entry_id, node in enumerate(operation_nodes(report.tree), start=1):
        connection.execute(
            "INSERT INTO run_time_entries (id, operation_name, forward_ms, backward_ms) "
            "VALUES (?, ?, ?, ?)",
            (
                entry_id,
                node.name,
                _finite(node.forward_ms, node, "forward_ms"),
                None
                if node.backward_ms is None
                else _finite(node.backward_ms, node, "backward_ms"),
            ),
        )
        connection.executemany(
            "INSERT INTO stack_frames (ordering, file_path, line_number, entry_id) "
            "VALUES (?, ?, ?, ?)",
            [(*frame, entry_id) for frame in project_frames(node.frames)],
        )


def _write_memory(connection: sqlite3.Connection, report: Report) -> None:
    for statement in MEMORY_SCHEMA:
        connection.execute(statement)
    connection.executemany("INSERT INTO entry_types (entry_type, name) VALUES (?, ?)", ENTRY_TYPES)
    correlation_ids = itertools.count(1)
    for entry_id, weight in enumerate(report.weights, start=1):
        connection.execute(
            "INSERT INTO weight_entries (id, name, size_bytes, grad_size_bytes) "
            "VALUES (?, ?, ?, ?)",
            (entry_id, weight.name, int(weight.bytes), int(weight.grad_bytes)),
        )
        _correlate(connection, next(correlation_ids), entry_id, WEIGHT_ENTRY_TYPE, weight.frames)
    activations = [n for n in operation_nodes(report.tree) if n.activation_bytes > 0]
    for entry_id, node in enumerate(activations, start=1):
        connection.execute(
            "INSERT INTO activation_entries (id, operation_name, size_bytes) VALUES (?, ?, ?)",
            (entry_id, node.name, int(node.activation_bytes)),
        )
        _correlate(connection, next(correlation_ids), entry_id, ACTIVATION_ENTRY_TYPE, node.frames)
    sizes = [("peak_usage_bytes", int(report.peak_bytes))]
    sizes += [(f"{name}_bytes", int(size)) for name, size in sorted(report.categories.items())]
    connection.executemany("INSERT INTO misc_sizes (key, size_bytes) VALUES (?, ?)", sizes)


def _correlate(
    connection: sqlite3.Connection,
    correlation_id: int,
    entry_id: int,
    entry_type: int,
    frames: list[Frame],
) -> None:
    connection.execute(
        "INSERT INTO stack_correlation (correlation_id, entry_id, entry_type) VALUES (?, ?, ?)",
        (correlation_id, entry_id, entry_type),
    )
    connection.executemany(
        "INSERT INTO stack_frames (correlation_id, ordering, file_path, line_number) "
        "VALUES (?, ?, ?, ?)",
        [(correlation_id, *frame) for frame in project_frames(frames)],
    )


def _finite(value: float, node: Node, field: str) -> float:
    """SQLite stores NaN as NULL (a cryptic NOT NULL failure): name the operation instead."""
    if not math.isfinite(value):
        raise ValueError(f"operation {node.path!r} has {field}={value!r}; times must be finite")
    return float(value)

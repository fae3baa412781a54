"""Skyline's SQLite reports: exact schemas, rows, frame order, NULLs, atomic and refusing writes.

The expected DDL is copied from Skyline's documented report format (issue 3), not from the
module's constants, so a drift in either place fails here.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from sample_reports import CELL, sample_report

from skyline_nb.export import atomic_output
from skyline_nb.export.sqlite import save_report
from skyline_nb.report import Frame, Node

RUN_TIME_DDL = """
CREATE TABLE run_time_entries (id INTEGER PRIMARY KEY, operation_name TEXT NOT NULL,
  forward_ms REAL NOT NULL, backward_ms REAL);
CREATE TABLE stack_frames (ordering INTEGER NOT NULL, file_path TEXT NOT NULL,
  line_number INTEGER NOT NULL, entry_id INTEGER NOT NULL, PRIMARY KEY (entry_id, ordering));
"""

MEMORY_DDL = """
CREATE TABLE weight_entries (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
  size_bytes INTEGER NOT NULL, grad_size_bytes INTEGER NOT NULL);
CREATE TABLE activation_entries (id INTEGER PRIMARY KEY, operation_name TEXT NOT NULL,
  size_bytes INTEGER NOT NULL);
CREATE TABLE entry_types (entry_type INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE stack_correlation (correlation_id INTEGER PRIMARY KEY, entry_id INTEGER NOT NULL,
  entry_type INTEGER NOT NULL, UNIQUE (correlation_id, entry_id));
CREATE UNIQUE INDEX entry_type_and_id ON stack_correlation(entry_type, entry_id);
CREATE TABLE stack_frames (correlation_id INTEGER NOT NULL, ordering INTEGER NOT NULL,
  file_path TEXT NOT NULL, line_number INTEGER NOT NULL, PRIMARY KEY (correlation_id, ordering));
CREATE TABLE misc_sizes (key TEXT PRIMARY KEY, size_bytes INT NOT NULL);
"""

# (column, declared type, NOT NULL, primary-key position) as PRAGMA table_info reports them.
COLUMNS = {
    "run_time_entries": [
        ("id", "INTEGER", 0, 1),
        ("operation_name", "TEXT", 1, 0),
        ("forward_ms", "REAL", 1, 0),
        ("backward_ms", "REAL", 0, 0),
    ],
    "time:stack_frames": [
        ("ordering", "INTEGER", 1, 2),
        ("file_path", "TEXT", 1, 0),
        ("line_number", "INTEGER", 1, 0),
        ("entry_id", "INTEGER", 1, 1),
    ],
    "weight_entries": [
        ("id", "INTEGER", 0, 1),
        ("name", "TEXT", 1, 0),
        ("size_bytes", "INTEGER", 1, 0),
        ("grad_size_bytes", "INTEGER", 1, 0),
    ],
    "activation_entries": [
        ("id", "INTEGER", 0, 1),
        ("operation_name", "TEXT", 1, 0),
        ("size_bytes", "INTEGER", 1, 0),
    ],
    "entry_types": [("entry_type", "INTEGER", 0, 1), ("name", "TEXT", 1, 0)],
    "stack_correlation": [
        ("correlation_id", "INTEGER", 0, 1),
        ("entry_id", "INTEGER", 1, 0),
        ("entry_type", "INTEGER", 1, 0),
    ],
    "memory:stack_frames": [
        ("correlation_id", "INTEGER", 1, 1),
        ("ordering", "INTEGER", 1, 2),
        ("file_path", "TEXT", 1, 0),
        ("line_number", "INTEGER", 1, 0),
    ],
    "misc_sizes": [("key", "TEXT", 0, 1), ("size_bytes", "INT", 1, 0)],
}

CELL_PATH = f"<cell {CELL}>"


def _normalise(sql: str) -> str:
    """Whitespace-insensitive form: runs of whitespace → one space, none inside brackets."""
    sql = re.sub(r"\s+", " ", sql.strip().rstrip(";"))
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", sql))


def _expected_ddl(text: str) -> list[str]:
    return [_normalise(s) for s in text.split(";") if s.strip()]


@contextmanager
def _open(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path)) as connection:
        yield connection


def _ddl(connection: sqlite3.Connection) -> list[str]:
    rows = connection.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    return [_normalise(sql) for (sql,) in rows]


def _table_info(connection: sqlite3.Connection, table: str) -> list[tuple[str, str, int, int]]:
    return [
        (name, kind, notnull, pk)
        for _, name, kind, notnull, _, pk in connection.execute(f"PRAGMA table_info({table})")
    ]


@pytest.fixture
def time_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    path = save_report(sample_report(), tmp_path / "t.sqlite", "time")
    with _open(path) as connection:
        yield connection


@pytest.fixture
def memory_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    path = save_report(sample_report(), tmp_path / "m.sqlite", "memory")
    with _open(path) as connection:
        yield connection


# ---- schemas ------------------------------------------------------------------------------
def test_time_schema_is_skylines_exactly(time_db: sqlite3.Connection) -> None:
    assert _ddl(time_db) == _expected_ddl(RUN_TIME_DDL)
    assert _table_info(time_db, "run_time_entries") == COLUMNS["run_time_entries"]
    assert _table_info(time_db, "stack_frames") == COLUMNS["time:stack_frames"]
    assert time_db.execute("PRAGMA user_version").fetchone() == (1,)
    assert time_db.execute("PRAGMA foreign_key_list(stack_frames)").fetchall() == []


def test_memory_schema_is_skylines_exactly(memory_db: sqlite3.Connection) -> None:
    assert _ddl(memory_db) == _expected_ddl(MEMORY_DDL)
    for table in (
        "weight_entries",
        "activation_entries",
        "entry_types",
        "stack_correlation",
        "misc_sizes",
    ):
        assert _table_info(memory_db, table) == COLUMNS[table], table
    assert _table_info(memory_db, "stack_frames") == COLUMNS["memory:stack_frames"]
    assert memory_db.execute("PRAGMA user_version").fetchone() == (1,)
    index = memory_db.execute("PRAGMA index_info(entry_type_and_id)").fetchall()
    assert [name for *_, name in index] == ["entry_type", "entry_id"]


# ---- run-time rows ------------------------------------------------------------------------
def test_one_row_per_op_in_execution_order_with_null_backward(
    time_db: sqlite3.Connection,
) -> None:
    rows = time_db.execute("SELECT * FROM run_time_entries ORDER BY id").fetchall()
    assert rows == [
        (1, "embedding", 0.25, 0.5),
        (2, "addmm", 1.0, 2.0),
        (3, "relu_", 0.5, 0.25),
        (4, "addmm", 1.0, 2.0),
        (5, "relu_", 0.5, 0.25),
        (6, "mm", 0.75, 1.0),
        (7, "nll_loss", 0.125, 0.0625),
        (8, "_foreach_add_", 0.5, None),  # the optimizer's op: no backward, NULL not 0
    ]
    # Modules and the untracked remainder are not operations: no rows for them.
    names = {name for (name,) in time_db.execute("SELECT operation_name FROM run_time_entries")}
    assert not names & {"Linear", "Embedding", "Net", "SGD", "untracked"}


def test_time_frames_closest_first_project_only(time_db: sqlite3.Connection) -> None:
    def frames(entry_id: int) -> list[tuple[int, str, int]]:
        return time_db.execute(
            "SELECT ordering, file_path, line_number FROM stack_frames "
            "WHERE entry_id = ? ORDER BY ordering",
            (entry_id,),
        ).fetchall()

    assert frames(1) == [(0, "model.py", 18), (1, "train.py", 9)]
    # "../outside.py" lies outside the project: dropped, and the ordering has no gap.
    assert frames(3) == [(0, "model.py", 20), (1, "train.py", 9)]
    # A notebook cell is named by its stable id, or by its code file when it has no id.
    assert frames(7) == [(0, CELL_PATH, 4), (1, "<cell 8.py>", 2)]
    assert frames(8) == [(0, "train.py", 14)]
    assert time_db.execute("SELECT COUNT(*) FROM stack_frames").fetchone() == (15,)


def test_optimizer_without_op_children_gets_its_own_row(tmp_path: Path) -> None:
    report = sample_report()
    optimizer = report.tree.find("optimizer")
    assert optimizer is not None
    optimizer.children = []
    optimizer.frames = [Frame("train.py", 14)]
    with _open(save_report(report, tmp_path / "t.sqlite", "time")) as connection:
        last = connection.execute(
            "SELECT id, operation_name, forward_ms, backward_ms FROM run_time_entries "
            "ORDER BY id DESC LIMIT 1"
        ).fetchone()
        frames = connection.execute(
            "SELECT ordering, file_path, line_number FROM stack_frames WHERE entry_id = 8"
        ).fetchall()
    assert last == (8, "SGD", 0.5, None)
    assert frames == [(0, "train.py", 14)]


def test_non_finite_time_is_refused_with_the_op_named(tmp_path: Path) -> None:
    report = sample_report()
    node = report.tree.find("head/mm#0")
    assert isinstance(node, Node)
    node.backward_ms = float("nan")
    with pytest.raises(ValueError, match=r"'head/mm#0' has backward_ms=nan"):
        save_report(report, tmp_path / "t.sqlite", "time")
    assert list(tmp_path.iterdir()) == []


# ---- memory rows --------------------------------------------------------------------------
def test_weights_once_each_named_as_pytorch_names_them(memory_db: sqlite3.Connection) -> None:
    assert memory_db.execute("SELECT * FROM weight_entries ORDER BY id").fetchall() == [
        (1, "embed.weight", 4096, 4096),
        (2, "blocks.0.weight", 1024, 1024),
        (3, "blocks.0.bias", 32, 32),
        (4, "blocks.1.weight", 1024, 1024),
        (5, "blocks.1.bias", 32, 32),
    ]


def test_activations_only_for_ops_that_saved_bytes(memory_db: sqlite3.Connection) -> None:
    assert memory_db.execute("SELECT * FROM activation_entries ORDER BY id").fetchall() == [
        (1, "addmm", 4096),
        (2, "relu_", 2048),
        (3, "addmm", 4096),
        (4, "relu_", 2048),
        (5, "mm", 1024),
        (6, "nll_loss", 512),
    ]
    assert memory_db.execute("SELECT * FROM entry_types ORDER BY entry_type").fetchall() == [
        (1, "Weight"),
        (2, "Activation"),
    ]


def test_every_entry_correlated_weights_first(memory_db: sqlite3.Connection) -> None:
    rows = memory_db.execute(
        "SELECT correlation_id, entry_type, entry_id FROM stack_correlation ORDER BY correlation_id"
    ).fetchall()
    assert rows == [(k, 1, k) for k in range(1, 6)] + [(5 + k, 2, k) for k in range(1, 7)]


def _memory_frames(db: sqlite3.Connection, entry_type: int, entry_id: int) -> list[tuple]:
    return db.execute(
        "SELECT s.ordering, s.file_path, s.line_number FROM stack_frames AS s "
        "JOIN stack_correlation AS c ON s.correlation_id = c.correlation_id "
        "WHERE c.entry_type = ? AND c.entry_id = ? ORDER BY s.ordering",
        (entry_type, entry_id),
    ).fetchall()


def test_memory_frames_closest_first_project_only(memory_db: sqlite3.Connection) -> None:
    assert _memory_frames(memory_db, 1, 1) == [(0, "model.py", 12), (1, "train.py", 30)]
    assert _memory_frames(memory_db, 1, 4) == []  # only a frame outside the root: dropped
    assert _memory_frames(memory_db, 2, 2) == [(0, "model.py", 20), (1, "train.py", 9)]
    assert _memory_frames(memory_db, 2, 6) == [(0, CELL_PATH, 4), (1, "<cell 8.py>", 2)]


def test_misc_sizes_hold_peak_and_every_category(memory_db: sqlite3.Connection) -> None:
    assert dict(memory_db.execute("SELECT key, size_bytes FROM misc_sizes")) == {
        "peak_usage_bytes": 1536 * 1024,
        "weights_bytes": 6208,
        "grads_bytes": 6208,
        "optimizer_bytes": 0,
        "activations_bytes": 13568,
        "buffers_bytes": 0,
        "inputs_bytes": 0,
        "backward_temporaries_bytes": 0,
        "optimizer_temporaries_bytes": 0,
        "kernel_workspace_bytes": 0,
        "untracked_bytes": -256,
    }


# ---- writing ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["time", "memory"])
def test_refuses_to_overwrite_unless_asked(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "report.sqlite"
    path.write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="already exists; refusing to overwrite"):
        save_report(sample_report(), path, kind)
    assert path.read_bytes() == b"keep me"
    save_report(sample_report(), path, kind, overwrite=True)
    with _open(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone() == (1,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.sqlite"]


def test_report_method_and_unknown_kind(tmp_path: Path) -> None:
    report = sample_report()
    assert report.save_sqlite(tmp_path / "t.sqlite") == tmp_path / "t.sqlite"
    assert report.save_sqlite(str(tmp_path / "m.sqlite"), kind="memory").is_file()
    with pytest.raises(ValueError, match="unknown SQLite report kind 'trace'"):
        report.save_sqlite(tmp_path / "x.sqlite", kind="trace")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        report.save_sqlite(tmp_path / "missing" / "t.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.sqlite", "t.sqlite"]


def test_output_appearing_meanwhile_is_not_clobbered(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    with pytest.raises(FileExistsError, match="refusing to overwrite"), atomic_output(path) as temp:
        temp.write_text("new")
        path.write_text("written by someone else meanwhile")
    assert path.read_text() == "written by someone else meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.sqlite"]


def test_published_file_has_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = save_report(sample_report(), tmp_path / "t.sqlite", "time")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


# ---- end to end: a real profile of the bundled MLP -----------------------------------------
@pytest.mark.slow
def test_real_profile_of_the_example_mlp(tmp_path: Path) -> None:
    import skyline_nb
    from skyline_nb.examples import mlp

    source = Path(mlp.__file__).read_text(encoding="utf-8").splitlines()
    fc1_line = source.index("        x = self.relu(self.fc1(x))") + 1
    call_line = source.index("        loss = loss_fn(model(x), y)") + 1
    report = skyline_nb.profile(
        mlp.skyline_model_provider,
        mlp.skyline_input_provider,
        mlp.skyline_iteration_provider,
        batch_size=8,
        device="cpu",
        predict=False,
        project_root=Path(mlp.__file__).parent,
    )
    ops = [n for n in report.tree.walk() if n.kind == "op"]

    with _open(report.save_sqlite(tmp_path / "t.sqlite", "time")) as db:
        assert _ddl(db) == _expected_ddl(RUN_TIME_DDL)
        rows = db.execute(
            "SELECT id, operation_name, forward_ms, backward_ms FROM run_time_entries ORDER BY id"
        ).fetchall()
        assert [name for _, name, *_ in rows] == [n.name for n in ops]
        assert [b is None for *_, b in rows] == [n.backward_ms is None for n in ops]
        fc1 = next(n for n in ops if n.path.startswith("fc1/"))
        fc1_id = ops.index(fc1) + 1
        frames = db.execute(
            "SELECT ordering, file_path, line_number FROM stack_frames "
            "WHERE entry_id = ? ORDER BY ordering",
            (fc1_id,),
        ).fetchall()
    # Closest first: the line in forward(), then the iteration's line calling model(x).
    assert frames[:2] == [(0, "mlp.py", fc1_line), (1, "mlp.py", call_line)]

    model = mlp.skyline_model_provider()
    with _open(report.save_sqlite(tmp_path / "m.sqlite", "memory")) as db:
        assert _ddl(db) == _expected_ddl(MEMORY_DDL)
        weights = db.execute(
            "SELECT name, size_bytes, grad_size_bytes FROM weight_entries ORDER BY id"
        ).fetchall()
        peak = db.execute(
            "SELECT size_bytes FROM misc_sizes WHERE key = 'peak_usage_bytes'"
        ).fetchone()
        activations = db.execute("SELECT SUM(size_bytes) FROM activation_entries").fetchone()
    assert weights == [
        (name, p.numel() * p.element_size(), p.numel() * p.element_size())
        for name, p in model.named_parameters()
    ]
    assert peak == (report.peak_bytes,)
    assert activations[0] > 0

"""The ``skyline-nb`` command end to end: the real profiler on the bundled example, in a
subprocess, as a user runs it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "skyline_nb" / "examples" / "mlp.py"


def _cli(*argv: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skyline_nb", *map(str, argv)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_end_to_end_time_and_memory_reports(tmp_path: Path) -> None:
    time_report = tmp_path / "t.sqlite"
    done = _cli("time", EXAMPLE, "-o", time_report, "--batch-size", "16", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert f"wrote {time_report}" in done.stdout
    # the progress
    assert ("% building the model, measuring its memory, then timing the iteration and each op · "
            in done.stderr)
    with closing(sqlite3.connect(time_report)) as connection:
        rows = connection.execute(
            "SELECT operation_name, forward_ms, backward_ms FROM run_time_entries"
        ).fetchall()
        files = {f for (f,) in connection.execute("SELECT DISTINCT file_path FROM stack_frames")}
    assert len(rows) >= 5
    assert all(forward >= 0 for _, forward, _ in rows)
    assert any(backward is not None for *_, backward in rows)
    assert "mlp.py" in files and all(not Path(f).is_absolute() for f in files)

    memory_report = tmp_path / "m.sqlite"
    done = _cli("memory", EXAMPLE, "-o", memory_report, "--batch-size", "16", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    with closing(sqlite3.connect(memory_report)) as connection:
        count, smallest, total, with_grads = connection.execute(
            "SELECT COUNT(*), MIN(size_bytes), SUM(size_bytes), SUM(grad_size_bytes = size_bytes)"
            " FROM weight_entries").fetchone()
        (peak,) = connection.execute(
            "SELECT size_bytes FROM misc_sizes WHERE key = 'peak_usage_bytes'").fetchone()
    assert count > 0 and smallest > 0 and with_grads == count  # every weight has its gradient
    assert peak > total

    again = _cli("time", EXAMPLE, "-o", time_report)
    assert again.returncode == 2 and "already exists" in again.stderr

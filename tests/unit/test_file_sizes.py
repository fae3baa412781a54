"""Small files: no source file over 400 lines, and the glue (the magic, the CLI) under 200.

A file that outgrows this holds more than one concern; split it by concern, not by line count.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [*(REPO / "skyline_nb").rglob("*.py"),
     *(p for p in (REPO / "js").rglob("*.js") if "node_modules" not in p.parts)]
)
MAX_LINES = 400
GLUE = ("skyline_nb/magic.py", "skyline_nb/cli.py")
GLUE_UNDER = 200


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_sources_are_found() -> None:
    names = {p.relative_to(REPO).as_posix() for p in SOURCES}
    assert {"skyline_nb/report.py", "js/src/format.js", *GLUE} <= names


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_source_file_over_400_lines(path: Path) -> None:
    assert _lines(path) <= MAX_LINES


@pytest.mark.parametrize("name", GLUE)
def test_the_magic_and_the_cli_stay_under_200_lines(name: str) -> None:
    assert _lines(REPO / name) < GLUE_UNDER

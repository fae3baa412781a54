"""Python prints numbers as the widget's JavaScript does: both are checked against one fixture.

``tests/fixtures/format_cases.json`` is read here and by ``js/test/format.test.js``; every case
of every formatter must match, and a formatter the fixture names but this test does not know
fails instead of being skipped.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from skyline_nb.export.units import format_bytes, format_ms, format_throughput

CASES = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "format_cases.json").read_text(encoding="utf-8")
)
FORMATTERS = {"ms": format_ms, "bytes": format_bytes, "throughput": format_throughput}
SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def test_the_fixture_names_exactly_these_formatters() -> None:
    assert set(CASES) - {"about"} == set(FORMATTERS)


@pytest.mark.parametrize(
    ("kind", "value", "text"),
    [(kind, value, text) for kind in FORMATTERS for value, text in CASES[kind]],
)
def test_format_matches_the_shared_fixture(kind: str, value: Any, text: str) -> None:
    value = SPECIAL.get(value, value) if isinstance(value, str) else value
    assert FORMATTERS[kind](value) == text

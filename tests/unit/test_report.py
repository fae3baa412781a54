"""The Report's versioned JSON: lossless round trips, strict JSON, and readable refusals.

Saved notebooks and shared ``report.json`` files are read back by later versions, so what goes
out must come back equal, and what cannot be read must say why (ReportFormatError), not fail
deep inside with a KeyError.
"""

from __future__ import annotations

import copy
import json
import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sample_reports import sample_report

from skyline_nb.report import (
    SCHEMA_VERSION,
    Frame,
    Node,
    OneThread,
    Report,
    ReportFormatError,
)


def _no_constants(name: str) -> Any:
    raise AssertionError(f"JSON contains {name}, which is not JSON")


@pytest.mark.parametrize("with_models", [True, False])
def test_dict_round_trip_is_lossless(with_models: bool) -> None:
    report = sample_report(with_models=with_models)
    again = Report.from_dict(report.to_dict())
    assert again == report
    assert again.tree.find("optimizer/_foreach_add_#0").backward_ms is None  # type: ignore[union-attr]
    assert again.categories["untracked"] == -256


def test_the_one_thread_time_round_trips_and_older_reports_read_without_it() -> None:
    report = sample_report()
    report.one_thread = OneThread(threads=2, one_thread_ms=2.42)
    data = json.loads(report.to_json())
    assert data["one_thread"] == {"threads": 2, "one_thread_ms": 2.42}
    assert Report.from_dict(data) == report
    del data["one_thread"]  # written before the field existed
    assert Report.from_dict(data).one_thread is None


def test_json_round_trip_through_text_and_files(tmp_path: Path) -> None:
    report = sample_report()
    text = report.to_json(tmp_path / "report.json")
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == text
    assert Report.from_json(text) == report
    assert Report.from_json(tmp_path / "report.json") == report
    assert Report.from_json(str(tmp_path / "report.json")) == report
    data = json.loads(text, parse_constant=_no_constants)
    assert data["schema_version"] == SCHEMA_VERSION
    # Derived values are written for the widget's convenience and ignored when read back.
    assert report.models is not None
    assert data["models"]["max_throughput"] == report.models.max_throughput


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("name", ["report_small.json", "report_large.json"])
def test_widget_fixtures_read_and_write_back_identically(name: str, tmp_path: Path) -> None:
    """The widget's fixtures (written by to_json) come back byte for byte: nothing is lost."""
    text = (FIXTURES / name).read_text(encoding="utf-8").strip()
    report = Report.from_json(text)
    assert report.to_json() == text
    # ...and they export: one time row per op, wherever it sits in a deep tree.
    ops = sum(1 for n in report.tree.walk() if n.kind == "op")
    with closing(sqlite3.connect(report.save_sqlite(tmp_path / "t.sqlite"))) as db:
        assert db.execute("SELECT COUNT(*) FROM run_time_entries").fetchone() == (ops,)


def test_models_survive_with_their_predictions() -> None:
    report = sample_report()
    again = Report.from_json(report.to_json())
    assert report.models is not None and again.models is not None
    assert again.models.can_manipulate and again.models.time is not None
    for batch in (8, 48, 100):
        assert again.models.predict_iteration_ms(batch) == report.models.predict_iteration_ms(batch)
        assert again.models.batch_size_for_memory(1 << 21) == report.models.batch_size_for_memory(
            1 << 21
        )
    assert again.models.knee_batch_size == report.models.knee_batch_size


@pytest.mark.parametrize("version", [None, 0, SCHEMA_VERSION + 1, "1"])
def test_other_schema_versions_are_refused(version: object) -> None:
    data = sample_report().to_dict()
    data["schema_version"] = version
    if version is None:
        del data["schema_version"]
    with pytest.raises(ReportFormatError, match=rf"schema_version {version!r} is not"):
        Report.from_dict(data)


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    data = copy.deepcopy(data)
    target = data
    for key in keys[:-1]:
        target = target[key]
    del target[keys[-1]]
    return data


@pytest.mark.parametrize(
    "missing",
    [
        ("tree",),
        ("device",),
        ("device", "name"),
        ("tree", "children", 0, "forward_ms"),
        ("batch_size",),
    ],
    ids=lambda keys: ".".join(map(str, keys)),
)
def test_missing_fields_are_a_format_error(missing: tuple[Any, ...]) -> None:
    with pytest.raises(ReportFormatError, match="malformed report"):
        Report.from_dict(_without(sample_report().to_dict(), *missing))


def test_unknown_node_kind_and_extra_fields_are_format_errors() -> None:
    data = sample_report().to_dict()
    data["tree"]["children"][0]["kind"] = "layer"
    with pytest.raises(ReportFormatError, match="unknown node kind 'layer'"):
        Report.from_dict(data)
    data = sample_report().to_dict()
    data["weights"][0]["dtype"] = "float32"
    with pytest.raises(ReportFormatError, match="malformed report"):
        Report.from_dict(data)


def test_nan_iteration_time_never_reaches_the_json(tmp_path: Path) -> None:
    """The profiler never produces NaN; if it ever did, to_json fails rather than write NaN."""
    report = sample_report()
    report.iteration_ms = math.nan
    with pytest.raises(ReportFormatError, match="NaN or infinity"):
        report.to_json(tmp_path / "report.json")
    assert not (tmp_path / "report.json").exists()


def test_nan_error_names_the_field() -> None:
    report = sample_report()
    report.iteration_ms = math.nan
    with pytest.raises(ValueError, match="iteration_ms"):
        report.to_json()


@pytest.mark.parametrize("data", [[], {"schema_version": SCHEMA_VERSION, "batch_size": "x"}])
def test_wrong_shapes_are_format_errors(data: Any) -> None:
    full = {**sample_report().to_dict(), **data} if isinstance(data, dict) else data
    with pytest.raises(ReportFormatError):
        Report.from_dict(full)


# ---- property: any tree the profiler could build survives the round trip --------------------
_finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
_frames = st.lists(
    st.builds(
        Frame,
        st.text(max_size=12),
        st.integers(1, 10_000),
        st.none() | st.text(min_size=1, max_size=8),
    ),
    max_size=3,
)


def _node(children: st.SearchStrategy[list[Node]]) -> st.SearchStrategy[Node]:
    return st.builds(
        Node,
        st.integers(0, 10**6),
        st.text(max_size=10),
        st.text(max_size=20),
        st.sampled_from(["module", "op", "optimizer", "untracked"]),
        _finite,
        st.none() | _finite,
        st.integers(-(1 << 40), 1 << 40),
        st.integers(0, 1 << 40),
        st.integers(0, 1 << 40),
        _frames,
        children,
    )


_trees = st.recursive(
    _node(st.just([])), lambda inner: _node(st.lists(inner, max_size=4)), max_leaves=20
)


@settings(max_examples=60, deadline=None)
@given(tree=_trees, iteration_ms=_finite, peak=st.integers(0, 1 << 50))
def test_any_tree_round_trips(tree: Node, iteration_ms: float, peak: int) -> None:
    report = sample_report(with_models=False)
    report.tree, report.iteration_ms, report.peak_bytes = tree, iteration_ms, peak
    assert Report.from_json(report.to_json()) == report

"""Categories and node kinds are data defined once (``skyline_nb/categories.py``): reports carry
the category list, old reports read with the default one, and a category added in Python alone
is drawn by the snapshot (the widget's side: ``js/test/categories.test.js``)."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sample_reports import sample_report
from within_ulps import within_ulps

from skyline_nb.categories import (
    CATEGORIES,
    Categories,
    Category,
    CategorySpec,
    NodeKind,
    Texture,
)
from skyline_nb.export.snapshot import snapshot_html
from skyline_nb.export.units import format_bytes
from skyline_nb.report import Report, ReportFormatError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
EXTRA = FIXTURES / "report_extra_category.json"


def test_every_category_has_one_descriptor_and_one_remainder() -> None:
    assert [spec.key for spec in CATEGORIES] == list(Category)
    assert sum(spec.remainder for spec in CATEGORIES) == 1
    assert Categories.of().specs == CATEGORIES
    node_fields = {"weight_bytes", "grad_bytes", "activation_bytes", "peak_activation_bytes",
                   "peak_grad_bytes"}
    assert {spec.node_field for spec in CATEGORIES} - {None} <= node_fields
    assert {spec.node_kind for spec in CATEGORIES} - {None} <= set(NodeKind)


def test_the_widget_spells_node_kinds_as_python_does() -> None:
    text = (ROOT / "js" / "src" / "tree.js").read_text(encoding="utf-8")
    body = re.search(r"NODE_KIND = Object\.freeze\(\{(.*?)\}\)", text, re.S)
    assert body is not None
    pairs = dict(re.findall(r"(\w+): \"(\w+)\"", body.group(1)))
    assert pairs == {kind.name: kind.value for kind in NodeKind}


def test_the_widget_css_draws_every_texture() -> None:
    css = (ROOT / "js" / "src" / "widget.css").read_text(encoding="utf-8")
    for texture in set(Texture) - {Texture.PLAIN}:
        assert f'.sk-seg[data-texture="{texture}"]' in css
        assert f'.sk-legend-item[data-texture="{texture}"]' in css


def test_the_report_carries_the_ordered_list_and_reads_it_back() -> None:
    report = sample_report()
    data = report.to_dict()
    assert [c["key"] for c in data["categories"]] == [str(spec.key) for spec in CATEGORIES]
    untracked = data["categories"][-1]
    assert untracked == {**untracked, "key": "untracked", "label": "other", "bytes": -256,
                         "grows_with_batch": False, "remainder": True}
    again = Report.from_dict(json.loads(report.to_json()))
    assert again == report and again.categories.specs == CATEGORIES
    assert dict(again.categories) == dict(report.categories)


def test_reports_written_before_the_list_read_with_the_default_categories() -> None:
    report = sample_report()
    data = report.to_dict()
    data["schema_version"] = 1
    data["categories"] = dict(report.categories)
    assert Report.from_dict(data) == report
    del data["categories"]
    assert Report.from_dict(data).categories == Categories.of()


def test_a_tree_without_a_category_s_node_field_draws_that_category_as_one_segment() -> None:
    """Gradients are split over the modules by ``peak_grad_bytes`` since session 32; a report
    written before (the categories as bytes by key, read with today's descriptors) has no such
    field in its tree, and would otherwise draw no gradients at all."""
    report = sample_report()
    data = report.to_dict()
    data["schema_version"] = 1
    data["categories"] = dict(report.categories)

    def strip(node: dict[str, Any]) -> None:
        del node["peak_grad_bytes"]
        for child in node["children"]:
            strip(child)

    strip(data["tree"])
    old = Report.from_dict(data)
    assert old.categories.spec(Category.GRADS).node_field is None
    assert old.categories.spec(Category.WEIGHTS).node_field == "weight_bytes"
    assert dict(old.categories) == dict(report.categories)
    assert report.categories.spec(Category.GRADS).node_field == "peak_grad_bytes"


def test_a_category_added_in_python_round_trips_and_exports(tmp_path: Path) -> None:
    text = EXTRA.read_text(encoding="utf-8").strip()
    report = Report.from_json(text)
    assert report.to_json() == text
    assert report.categories.spec("staging").label == "staging copies"
    assert sum(report.categories.values()) == report.peak_bytes
    with closing(sqlite3.connect(report.save_sqlite(tmp_path / "m.sqlite", "memory"))) as db:
        rows = dict(db.execute("SELECT key, size_bytes FROM misc_sizes").fetchall())
    assert rows["staging_bytes"] == report.categories["staging"]


def test_the_extra_category_fixture_is_what_make_reports_writes() -> None:
    sys.path.insert(0, str(FIXTURES))
    try:
        from make_reports import extra_category_report
    finally:
        sys.path.remove(str(FIXTURES))
    written = json.loads(EXTRA.read_text(encoding="utf-8"))
    assert json.loads(extra_category_report().to_json()) == within_ulps(written)



def test_the_snapshot_draws_a_category_it_has_never_heard_of() -> None:
    data = json.loads(EXTRA.read_text(encoding="utf-8"))
    staging = next(c for c in data["categories"] if c["key"] == "staging")
    html = snapshot_html(data)
    memory = html[html.index("<b>Memory</b>"):]
    segment = re.search(r'<rect [^>]*fill="#59a14f"><title>staging copies: ([^<]*)</title>', memory)
    assert segment is not None and segment.group(1).startswith(format_bytes(staging["bytes"]))
    assert f"staging copies {format_bytes(staging['bytes'])}" in memory  # the legend
    assert "weights + grads" not in memory  # the snapshot lists every category on its own
    assert "gradients " in memory and "optimizer state" not in memory  # 0 B: not listed


def _with_category(**changes: Any) -> dict[str, Any]:
    data = sample_report().to_dict()
    data["categories"][0].update(changes)
    return data


@pytest.mark.parametrize("changes", [
    {"color": "red;}</style><script>"},
    {"key": "grads"},
    {"bytes": 1.5},
    {"shown_with": "nothing"},
    {"remainder": True},
    {"grows_with_batch": "yes"},
    {"node_field": 3},
])
def test_malformed_categories_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ReportFormatError, match="malformed report"):
        Report.from_dict(_with_category(**changes))


def test_categories_are_built_from_measurements_with_the_remainder_last() -> None:
    measured = {Category.WEIGHTS: 10, Category.GRADS: 10, Category.ACTIVATIONS: 50,
                Category.OPTIMIZER: 20}
    categories = Categories.at_peak(100, measured)
    assert categories[Category.UNTRACKED] == 10 and categories["weights"] == 10
    with pytest.raises(ValueError, match="remainder"):
        Categories.at_peak(100, {**measured, Category.UNTRACKED: 1})
    with pytest.raises(ValueError, match="unknown memory categories"):
        Categories.of({"staging": 1})
    with pytest.raises(ValueError, match="#rrggbb"):
        CategorySpec("inputs", "inputs", True, "green")


def test_with_peak_keeps_what_was_measured_and_moves_the_remainder() -> None:
    measured = {Category.WEIGHTS: 100, Category.ACTIVATIONS: 50}
    at_200 = Categories.at_peak(200, measured)
    at_120 = at_200.with_peak(120)
    assert at_120 == Categories.at_peak(120, measured)
    assert at_120[Category.UNTRACKED] == -30 and sum(at_120.values()) == 120
    assert at_120.specs == at_200.specs

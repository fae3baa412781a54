"""The report trait travels compact (deflated JSON in one string) and reads back whole."""

from __future__ import annotations

import json
from pathlib import Path

from skyline_nb.widget import COMPACT_PREFIX, SkylineWidget, report_from_wire, report_to_wire

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_the_state_holds_the_report_compact_and_it_reads_back() -> None:
    report = json.loads((FIXTURES / "report_large.json").read_text(encoding="utf-8"))
    widget = SkylineWidget(report=report)
    wire = widget.get_state()["report"]
    assert isinstance(wire, str) and wire.startswith(COMPACT_PREFIX)
    assert report_from_wire(wire) == report == widget.report
    assert len(wire) < len(json.dumps(report)) / 5


def test_an_empty_report_stays_an_empty_object() -> None:
    assert SkylineWidget().get_state()["report"] == {}
    assert report_to_wire({}) == {} and report_from_wire({}) == {}
    assert report_from_wire({"batch_size": 8}) == {"batch_size": 8}

"""``report.to_chrome_trace``: valid trace-event JSON whose slices nest as the tree does and add
up to the report's totals, a memory counter placed on them, and a file written atomically."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sample_reports import sample_report

from skyline_nb.entry import export, export_kind
from skyline_nb.examples import cnn
from skyline_nb.export import trace as trace_module
from skyline_nb.export.trace import TIMING_NOTE, TRACKS, chrome_trace
from skyline_nb.profiler.session import profile
from skyline_nb.report import Report

MS = 1_000_000  # ns


@pytest.fixture(scope="module")
def report() -> Report:
    return profile(cnn.skyline_model_provider, cnn.skyline_input_provider,
                   cnn.skyline_iteration_provider, batch_size=4, device="cpu", predict=False)


def _ns(us: float) -> int:
    return round(us * 1000)


def _totals(report: Report) -> dict[str, float]:
    """The report's time per phase, summed from the tree's top level."""
    model = [c for c in report.tree.children if c.kind in ("module", "op")]
    return {
        "forward": sum(c.forward_ms for c in model),
        "backward": sum(c.backward_ms or 0.0 for c in model),
        "optimizer": sum(c.forward_ms for c in report.tree.children if c.kind == "optimizer"),
        "untracked": sum(c.forward_ms for c in report.tree.children if c.kind == "untracked"),
    }


def check_trace(trace: dict[str, Any], report: Report) -> None:
    """Everything a viewer relies on, and that the slices are the report's times."""
    json.dumps(trace, allow_nan=False)
    assert trace["metadata"]["timing"] == TIMING_NOTE
    events = trace["traceEvents"]
    assert {e["ph"] for e in events} <= {"X", "M", "C"}
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {tid: track for tid, track in enumerate(TRACKS, start=1)}
    slices = [e for e in events if e["ph"] == "X"]
    for e in slices:
        assert e["ts"] >= 0 and e["dur"] >= 0 and e["pid"] == 1 and e["name"]
    spans, totals = {}, _totals(report)
    for tid, track in names.items():
        mine = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e) for e in slices if e["tid"] == tid]
        for start, end, event in mine:  # a module spans exactly the slices inside it
            inner = [(s, t) for s, t, e in mine if e is not event and start <= s and t <= end]
            if event["cat"] in ("module", "optimizer"):
                assert inner and min(s for s, _ in inner) == start
                assert max(t for _, t in inner) == end
        for i, (s1, e1, _) in enumerate(mine):  # nested or apart: never partly overlapping
            for s2, e2, _ in mine[i + 1:]:
                assert e1 <= s2 or e2 <= s1 or (s1 <= s2 and e2 <= e1) or (s2 <= s1 and e1 <= e2)
        leaves = [(s, t) for s, t, e in mine if e["cat"] in ("op", "untracked")]
        assert sum(t - s for s, t in leaves) / MS == pytest.approx(totals[track], abs=1e-5)
        assert all(t1 <= s2 for (_, t1), (s2, _) in pairwise(leaves))  # laid end to end
        if leaves:
            spans[track] = (leaves[0][0], leaves[-1][1])
    ordered = [spans[t] for t in TRACKS if t in spans]
    assert ordered[0][0] == 0 and all(a[1] == b[0] for a, b in pairwise(ordered))
    counter = [e for e in events if e["ph"] == "C"]
    assert len(counter) == len(report.memory_timeline)
    if counter:
        times = [_ns(e["ts"]) for e in counter]
        assert times == sorted(times) and times[-1] <= ordered[-1][1]
        assert max(e["args"]["bytes"] for e in counter) == max(b for _, _, b in
                                                               report.memory_timeline)


def test_a_profiled_iteration_gives_a_valid_trace(report: Report, tmp_path: Path) -> None:
    path = report.to_chrome_trace(tmp_path / "cnn.trace.json")
    trace = json.loads(path.read_text(encoding="utf-8"))
    check_trace(trace, report)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {"blocks.0.conv1", "[optimizer]"} <= {e["args"]["path"] for e in slices}
    assert len(report.memory_timeline) > 100 and report.tree.backward_ms


def test_the_hand_built_report_lays_out_the_phases_one_after_the_other() -> None:
    report = sample_report()
    trace = chrome_trace(report)
    check_trace(trace, report)
    slices = {(e["tid"], e["args"]["path"]): (_ns(e["ts"]), _ns(e["dur"]))
              for e in trace["traceEvents"] if e["ph"] == "X"}
    forward, backward, optimizer, untracked = 1, 2, 3, 4
    assert slices[forward, "embed"] == (0, MS // 4)
    assert slices[forward, "blocks.1"] == (MS * 7 // 4, MS * 3 // 2)
    assert slices[backward, "/nll_loss#0"] == (4125 * MS // 1000, MS // 16)  # reverse order
    assert slices[backward, "blocks.1/relu_#0"] == (5187500, MS // 4)  # before its addmm
    assert slices[backward, "embed"] == (9687500, MS // 2)
    assert slices[optimizer, "optimizer"] == (10187500, MS // 2)
    assert slices[untracked, "untracked"] == (10687500, 8562500)
    assert trace["metadata"]["backward_ms"] == 6.0625


def test_memory_points_sit_at_the_end_of_their_op_or_spread_between_neighbours() -> None:
    report = sample_report()
    report.memory_timeline = [
        ["forward", "", 100],  # no op: between the start and the next point
        ["forward", "embed/embedding#0", 200],
        ["forward", "blocks.0/addmm#0", 300],  # two entries for one op: over its slice
        ["forward", "blocks.0/addmm#0", 350],
        ["forward", "nowhere#0", 400],  # not in the tree
        ["forward", "/nll_loss#0", 500],
        ["backward", "head/mm#0", 450],
        ["backward", "embed/embedding#0", 250],
        ["backward", "blocks.0/addmm#0", 260],  # ends before the point above it
        ["optimizer", "", 270],
        ["optimizer", "", 280],
    ]
    trace = chrome_trace(report)
    check_trace(trace, report)
    counter = [(_ns(e["ts"]), e["args"]["bytes"]) for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counter == [
        (125000, 100), (250000, 200), (750000, 300), (1250000, 350), (2687500, 400),
        (4125000, 500), (5187500, 450), (10187500, 250),
        (10312500, 260), (10437500, 270), (10562500, 280),  # up to the optimizer's end
    ]


def test_only_backward_ops_and_empty_modules_get_no_forward_slice() -> None:
    report = sample_report()
    embed = report.tree.children[0]
    embed.forward_ms = embed.children[0].forward_ms = 0.0  # as an accumulated gradient
    report.tree.children[1].children.clear()  # a module that never ran
    report.tree.children[1].forward_ms, report.tree.children[1].backward_ms = 0.0, None
    trace = chrome_trace(report)
    check_trace(trace, report)
    forward = {e["args"]["path"] for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == 1}
    backward = {e["args"]["path"] for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == 2}
    assert "embed" not in forward and "blocks.0" not in forward
    assert {"embed", "embed/embedding#0"} <= backward


def test_a_time_that_is_not_a_duration_is_refused() -> None:
    report = sample_report()
    report.tree.children[0].children[0].backward_ms = float("nan")
    with pytest.raises(ValueError, match=r"embed/embedding#0: nan ms is not a backward time"):
        chrome_trace(report)


def test_the_file_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.trace.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(FileExistsError):
        sample_report().to_chrome_trace(path, overwrite=False)

    def dump_half(data: Any, file: Any, **kwargs: Any) -> None:
        file.write('{"traceEvents": [')
        raise KeyboardInterrupt

    monkeypatch.setattr(trace_module.json, "dump", dump_half)
    for target in (path, tmp_path / "new.trace.json"):
        with pytest.raises(KeyboardInterrupt):
            sample_report().to_chrome_trace(target)
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trace.json"]  # no temporary left


def test_names_ending_in_trace_json_are_traces_other_json_names_reports(tmp_path: Path) -> None:
    assert export_kind(tmp_path / "run.Trace.JSON") == "trace"
    assert export_kind(tmp_path / "trace.json") == "json"  # only the .trace.json suffix counts
    export(sample_report(), tmp_path / "a.trace.json", overwrite=False)
    export(sample_report(), tmp_path / "a.json", overwrite=False)
    check_trace(json.loads((tmp_path / "a.trace.json").read_text()), sample_report())
    assert Report.from_json(tmp_path / "a.json") == sample_report()

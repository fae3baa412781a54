"""The static snapshot shown where the widget cannot run: numbers, bars, errors — as text."""

from __future__ import annotations

import json
from pathlib import Path

from skyline_nb.export.snapshot import headline, snapshot_html

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_snapshot_of_a_real_report_has_headline_and_svg_bars():
    report = json.loads((FIXTURES / "report_cnn.json").read_text(encoding="utf-8"))
    html = snapshot_html(report)
    assert html.startswith('<div class="skyline-nb-snapshot"')
    assert f"batch {report['batch_size']}" in html
    assert html.count("<svg") == 3  # key bars, run time, memory
    assert "<script" not in html


def test_errors_and_user_strings_are_escaped_and_hideable():
    html = snapshot_html({}, "ProviderError: <img src=x onerror=alert(1)>")
    assert 'class="skyline-nb-snapshot"' in html  # the widget's CSS can hide it
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    report = json.loads((FIXTURES / "report_small.json").read_text(encoding="utf-8"))
    report["tree"]["children"][0]["name"] = "<b>evil</b>"
    assert "<b>evil</b>" not in snapshot_html(report)


def test_the_profilers_warnings_are_listed_as_text():
    report = json.loads((FIXTURES / "report_small.json").read_text(encoding="utf-8"))
    report["warnings"] = ["the iteration returned a NaN/inf loss", "<script>x()</script> ran"]
    html = snapshot_html(report)
    assert "<li>the iteration returned a NaN/inf loss</li>" in html
    assert "<script" not in html and "<li>&lt;script&gt;x()&lt;/script&gt; ran</li>" in html
    report["warnings"] = []
    assert "<li>" not in snapshot_html(report)


def test_the_memory_bar_is_scaled_to_the_drag_range_not_to_the_ram():
    """On a CPU without a budget the capacity is the machine's free RAM, no bound a user means:
    the bar's top is the predicted peak at the largest batch the drag reaches."""
    from skyline_nb.export.units import format_bytes

    report = json.loads((FIXTURES / "report_cnn.json").read_text(encoding="utf-8"))
    models = report["models"]
    models["memory_bound"] = False
    top = models["memory"]["slope"] * models["max_batch_size"] + models["memory"]["intercept"]
    html = snapshot_html(report)
    assert f"predicted at batch {models['max_batch_size']}" in html
    assert format_bytes(top) in html
    capacity = f"of {format_bytes(report['device']['capacity_bytes'])}</title>"
    assert capacity not in html
    models["memory_bound"] = True
    assert capacity in snapshot_html(report)


def test_the_time_at_one_thread_follows_the_iteration_where_it_was_measured():
    report = json.loads((FIXTURES / "report_small.json").read_text(encoding="utf-8"))
    assert "at 1 thread" not in headline(report)
    report["iteration_ms"] = 3870.0
    report["one_thread"] = {"threads": 2, "one_thread_ms": 243.0}
    assert "· 3.87 s/iteration (243 ms at 1 thread) ·" in headline(report)
    assert "(243 ms at 1 thread)" in snapshot_html(report)


def test_the_headline_says_where_the_maximum_is_and_how_it_is_known():
    small = json.loads((FIXTURES / "report_small.json").read_text(encoding="utf-8"))
    # measured to 256; 2,048 is the drag's top, where the throughput still grows
    assert headline(small).endswith(
        "samples/s, predicted at batch 2,048, the drag's end (extrapolated)")
    cnn = json.loads((FIXTURES / "report_cnn.json").read_text(encoding="utf-8"))
    best = max(cnn["samples"], key=lambda s: s["batch_size"] / s["iteration_ms"])
    # a sample's throughput is the best: which one
    assert headline(cnn).endswith(f"samples/s, measured at batch {best['batch_size']:,}")

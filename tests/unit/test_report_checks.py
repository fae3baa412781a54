"""``impossible_values``: silent on honest reports, and each impossible value is named.

Honest: the recorded and synthetic reports of tests/fixtures, the hand-built sample report, and
a real profile of the MLP example with its samples and models. Impossible: each check fed the
value it exists for (issue 12: a child at 148.5 % of its parent, untracked −93 ms, a maximum
throughput below the measured one, predictions from a line that goes negative).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from sample_reports import sample_report

from skyline_nb.examples import mlp
from skyline_nb.models.curve import Curve
from skyline_nb.models.fit import LinearFit
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler.session import profile
from skyline_nb.report import Node, OneThread, Report, Sample
from skyline_nb.report_checks import impossible_values, untracked_floor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(name: str) -> Report:
    return Report.from_json(FIXTURES / f"report_{name}.json")


@pytest.mark.parametrize("name", ["small", "cnn", "large"])
def test_recorded_and_synthetic_fixtures_are_honest(name: str) -> None:
    report = fixture(name)
    assert report.models is not None and report.models.can_manipulate
    assert impossible_values(report) == []


def test_the_sample_report_is_honest_with_and_without_models() -> None:
    assert impossible_values(sample_report()) == []
    assert impossible_values(sample_report(with_models=False)) == []


@pytest.mark.parametrize(("one_ms", "honest"), [(2.4, True), (0.0, False),
                                                 (float("nan"), False)])
def test_a_time_at_one_thread_must_be_a_measured_duration(one_ms: float, honest: bool) -> None:
    report = sample_report()
    report.one_thread = OneThread(threads=2, one_thread_ms=one_ms)
    found = impossible_values(report)
    assert (found == []) is honest, found
    if not honest:
        assert found == [f"the measured time at one thread is {one_ms}"]


def test_a_real_profile_with_samples_is_honest() -> None:
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=16, device="cpu", predict=True)
    assert len(report.samples) >= 3
    # Whether untracked time stays within the noise on a loaded machine is the profiler's own
    # measurement (its tests and BENCHMARKS.md); everything else here must hold on any profile.
    assert [f for f in impossible_values(report) if not f.startswith("untracked time")] == []


# ---- untracked time and the noise floor -------------------------------------------------------
def with_untracked(report: Report, untracked_ms: float) -> Report:
    """The report with untracked time moved into its ops: the same iteration, a larger Σ ops."""
    changed = copy.deepcopy(report)
    node = next(c for c in changed.tree.children if c.kind == "untracked")
    delta = node.forward_ms - untracked_ms
    node.forward_ms = changed.untracked_ms = untracked_ms
    chain = [changed.tree]
    while chain[-1].children and chain[-1].children[0].kind != "untracked":
        chain.append(chain[-1].children[0])  # down to the first op
    for ancestor in chain:
        ancestor.forward_ms += delta
    changed.tree.forward_ms -= delta  # the root keeps the iteration time
    return changed


def test_slightly_negative_untracked_time_is_noise_and_more_is_not() -> None:
    report = fixture("cnn")
    floor = untracked_floor(report)
    assert floor == pytest.approx(-0.25 * report.iteration_ms)
    assert impossible_values(with_untracked(report, 0.5 * floor)) == []
    found = impossible_values(with_untracked(report, 3 * floor))
    assert any(f.startswith("untracked time is") for f in found)
    assert any("has a forward time of" in f for f in found)


def test_iterations_under_a_fifth_of_a_millisecond_allow_fifty_microseconds() -> None:
    report = sample_report(with_models=False)
    report.iteration_ms = 0.1
    ops = sum(node.kind == "op" for node in report.tree.walk())
    assert untracked_floor(report) == -max(0.05, 0.008 * ops)


def test_the_dispatch_cost_of_many_tiny_ops_is_noise_too() -> None:
    """18 op nodes (the issue's MLP) allow 144 µs below a 0.3 ms iteration, not only 75 µs."""
    report = sample_report(with_models=False)
    report.iteration_ms = 0.3
    ops = sum(node.kind == "op" for node in report.tree.walk())
    assert untracked_floor(report) == pytest.approx(-max(0.075, 0.008 * ops))


# ---- the tree ---------------------------------------------------------------------------------
def test_a_child_larger_than_its_parent_is_named() -> None:
    # Issue 12's GRU: a tree keeping the negative untracked time put a child at 148.5 % of the
    # whole model (85.8 ms of 57.8 ms).
    report = sample_report(with_models=False)
    blocks = report.tree.find("blocks.0")
    report.tree.children[-1].forward_ms -= 30.0
    report.tree.forward_ms -= 30.0
    report.untracked_ms -= 30.0
    report.iteration_ms -= 30.0
    blocks.forward_ms += 1.0  # and a module no longer the sum of its ops
    found = impossible_values(report)
    assert any("more than its parent" in f and "'blocks.0'" in f for f in found)
    assert any("takes" in f and "in 'Net'" in f for f in found)


def test_a_negative_op_time_and_bytes_larger_than_the_parent_are_named() -> None:
    report = sample_report(with_models=False)
    op = report.tree.find("head/mm#0")
    op.backward_ms = -0.5
    op.activation_bytes = 10**6
    found = impossible_values(report)
    assert any("'head/mm#0' has a backward time of" in f for f in found)
    assert any("activations, more than its parent" in f for f in found)


def test_the_breakdown_total_must_be_the_header_iteration_time() -> None:
    report = sample_report(with_models=False)
    report.iteration_ms += 1.0
    assert any("not the iteration time" in f for f in impossible_values(report))
    # A tree without an untracked node: the widget adds the report's untracked time itself.
    bare = sample_report(with_models=False)
    bare.tree.children = [c for c in bare.tree.children if c.kind != "untracked"]
    bare.tree.forward_ms -= bare.untracked_ms
    assert impossible_values(bare) == []


# ---- the models -------------------------------------------------------------------------------
def test_a_maximum_throughput_below_a_measured_one_is_named() -> None:
    report = sample_report()
    report.samples.append(Sample(8, 0.01, 1 << 20))  # 800,000 samples/s measured
    assert any("below a measured" in f for f in impossible_values(report))


def test_a_drag_range_beyond_the_samples_is_named() -> None:
    report = sample_report()
    report.samples = [s for s in report.samples if s.batch_size <= 16]
    found = impossible_values(report)
    assert any("beyond 8× the largest measured 16" in f for f in found)


def forced(time: LinearFit, report: Report) -> PerformanceModels:
    """Models claiming a drag that their lines cannot support (an edited or foreign report)."""
    models = copy.deepcopy(report.models)
    models.time = Curve.of_line(time)
    models.can_manipulate = True  # after construction: __post_init__ would have refused
    return models


def test_predictions_that_go_negative_are_named() -> None:
    report = sample_report()
    report.models = forced(LinearFit(0.6, -1.0, 1.0), report)
    found = impossible_values(report)
    assert any("at batch size 1 the models predict -0.4 ms" in f for f in found)


def test_a_knee_outside_the_range_is_named() -> None:
    report = sample_report()
    report.models.knee_batch_size = 10**6
    assert any("knee at batch size 1000000" in f for f in impossible_values(report))


def test_a_knee_range_that_does_not_hold_the_knee_is_named() -> None:
    report = sample_report()
    knee = report.models.knee_batch_size
    assert knee is not None and impossible_values(report) == []
    report.models.knee_range = (knee, None)  # up to past the drag's end: allowed
    assert impossible_values(report) == []
    report.models.knee_range = (knee + 1, knee + 5)
    assert any(f"the knee's range {knee + 1}–{knee + 5} does not hold the knee ({knee})" in f
               for f in impossible_values(report))


def test_nodes_are_compared_with_their_own_parent_only() -> None:
    root = Node(0, "Net", "", "root", 2.0, None, children=[
        Node(1, "A", "a", "module", 1.5, None, children=[Node(2, "x", "a/x#0", "op", 1.5)]),
        Node(3, "untracked", "untracked", "untracked", 0.5),
    ])
    report = sample_report(with_models=False)
    report.tree, report.iteration_ms, report.untracked_ms = root, 2.0, 0.5
    report.throughput = 1000.0 * report.batch_size / 2.0
    assert impossible_values(report) == []

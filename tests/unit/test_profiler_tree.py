"""The breakdown tree never has a node larger than its parent, whatever untracked time is.

Issue 12: a GRU drilled as "85.8 ms · 148.5 % of GRUClassifier" — the ops timed one by one
summed to more than the uninstrumented iteration, and the tree kept the negative remainder.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from torch import nn

from skyline_nb.profiler.operations import BACKWARD, FORWARD, OPTIMIZER, OpRecord
from skyline_nb.profiler.tree import OPTIMIZER_PATH, TreeInputs, build_tree


def tree_for(untracked_ms: float):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    records = [
        OpRecord(0, "addmm", "0", FORWARD, forward_ms=30.0, backward_ms=40.0, key="addmm#0"),
        OpRecord(1, "relu", "1", FORWARD, forward_ms=5.0, backward_ms=5.0, key="relu#0"),
        OpRecord(2, "addmm", "2", FORWARD, forward_ms=4.0, backward_ms=6.0, key="addmm#0"),
        OpRecord(3, "_foreach_add_", OPTIMIZER_PATH, OPTIMIZER, forward_ms=10.0, key="step#0"),
        OpRecord(4, "unlinked", "", BACKWARD, forward_ms=0.0, backward_ms=None, key="unlinked#0"),
    ]
    ops = SimpleNamespace(records=records, module_frames={}, extra_modules={},
                          ops_ms=lambda: sum(r.forward_ms + (r.backward_ms or 0) for r in records))
    return build_tree(TreeInputs(model, ops, {}, {}, {}, {}, ({}, {}), {}, {}, {}, {}, {},
                                 untracked_ms, "SGD"))


def test_a_positive_remainder_is_kept_as_measured() -> None:
    root = tree_for(20.0)
    assert root.total_ms == pytest.approx(120.0)
    assert root.find("[untracked]").forward_ms == 20.0
    assert root.find("0/addmm#0").total_ms == 70.0


def test_ops_that_add_up_to_more_than_the_iteration_hold_their_shares_of_it() -> None:
    root = tree_for(-40.0)  # Σ ops 100 ms, iteration 60 ms
    assert root.total_ms == pytest.approx(60.0)
    assert root.find("[untracked]").forward_ms == 0.0
    linear = root.find("0")
    assert linear.forward_ms == pytest.approx(18.0) and linear.backward_ms == pytest.approx(24.0)
    assert root.find("[optimizer]").total_ms == pytest.approx(6.0)
    for node in root.walk():
        for child in node.children:
            assert child.total_ms <= node.total_ms + 1e-12

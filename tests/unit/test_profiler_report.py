"""What profile() reports for the hand-written example models (CPU, small batches).

Each example is profiled once per module (fixture) and the structure checked: exact weight and
grad bytes, one node per module instance, Σ children = parent, ops linked to the lines of the
example files, backward linked to forward, categories that add up, JSON round trip.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from skyline_nb.categories import Category
from skyline_nb.examples import cnn, lstm, mlp, transformer
from skyline_nb.profiler.session import profile
from skyline_nb.report import Node, Report

EXAMPLES = {"mlp": mlp, "cnn": cnn, "transformer": transformer, "lstm": lstm}


def run(example, batch_size: int = 4, **kwargs) -> Report:
    return profile(
        example.skyline_model_provider,
        example.skyline_input_provider,
        example.skyline_iteration_provider,
        batch_size=batch_size,
        device="cpu",
        predict=False,
        **kwargs,
    )


@pytest.fixture(scope="module")
def reports(one_thread) -> dict[str, Report]:
    return {name: run(module) for name, module in EXAMPLES.items()}


def line_of(module, text: str) -> int:
    """The 1-based line of the only line in ``module``'s file containing ``text``."""
    lines = Path(module.__file__).read_text().splitlines()
    found = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def inner_nodes(root: Node) -> list[Node]:
    return [n for n in root.walk() if n.children]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_weights_and_grads_are_exact(reports, name):
    report = reports[name]
    model = EXAMPLES[name].skyline_model_provider()
    expected = {n: p.numel() * p.element_size() for n, p in model.named_parameters()}
    assert {w.name: w.bytes for w in report.weights} == expected
    assert {w.name: w.grad_bytes for w in report.weights} == expected
    assert report.categories["weights"] == sum(expected.values())
    # gradients alive at the peak: those backward had computed by then
    assert 0 <= report.categories["grads"] <= sum(expected.values())
    assert report.tree.weight_bytes == sum(expected.values())


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_children_sum_to_parent(reports, name):
    for node in inner_nodes(reports[name].tree):
        assert node.forward_ms == pytest.approx(sum(c.forward_ms for c in node.children))
        backward = [c.backward_ms for c in node.children if c.backward_ms is not None]
        if backward:
            assert node.backward_ms == pytest.approx(sum(backward))
        else:
            assert node.backward_ms is None
        assert node.activation_bytes == sum(c.activation_bytes for c in node.children)
        assert node.peak_activation_bytes == sum(c.peak_activation_bytes for c in node.children)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_totals_and_categories_add_up(reports, name):
    report = reports[name]
    root = report.tree
    assert root.kind == "root"
    assert root.total_ms == pytest.approx(report.iteration_ms)
    untracked = root.find("[untracked]")
    # A negative untracked time is not drawn: the ops then hold their shares of the iteration
    # (profiler/tree.py), so no node is larger than the root.
    assert untracked is not None
    assert untracked.forward_ms == pytest.approx(max(0.0, report.untracked_ms))
    assert set(report.categories) == {str(c) for c in Category}
    assert sum(report.categories.values()) == report.peak_bytes
    assert -0.005 * report.peak_bytes <= report.categories["untracked"]
    assert report.categories["activations"] == root.peak_activation_bytes > 0
    assert root.activation_bytes > 0
    assert report.peak_bytes > report.categories["weights"] + report.categories["optimizer"]
    assert report.throughput == pytest.approx(1000 * report.batch_size / report.iteration_ms)
    assert report.instrumented_ms is not None and report.instrumented_ms > 0
    assert len({n.path for n in root.walk()}) == sum(1 for _ in root.walk())
    assert [n.id for n in root.walk()] == list(range(sum(1 for _ in root.walk())))


def test_optimizer_state_bytes(reports):
    # SGD with momentum keeps one buffer per parameter, Adam two (plus a step count each).
    assert reports["mlp"].categories["optimizer"] == reports["mlp"].categories["weights"]
    adam = reports["transformer"].categories
    assert 2 * adam["weights"] <= adam["optimizer"] <= 2 * adam["weights"] + 64 * 8
    optimizer = reports["transformer"].tree.find("[optimizer]")
    assert optimizer is not None and optimizer.name == "Adam" and optimizer.forward_ms > 0


def test_each_loop_iteration_is_its_own_node(reports):
    root = reports["cnn"].tree
    blocks = root.find("blocks")
    assert blocks is not None
    assert [c.path for c in blocks.children] == ["blocks.0", "blocks.1", "blocks.2"]
    model = cnn.skyline_model_provider()
    for i, block in enumerate(blocks.children):
        conv = root.find(f"blocks.{i}.conv1/convolution#0")
        assert conv is not None and conv.forward_ms > 0 and conv.backward_ms > 0
        expected = sum(p.numel() * 4 for p in model.blocks[i].parameters())
        assert block.weight_bytes == expected
    # the shared in-place ReLU instance of a block runs twice: two ops under one node
    assert root.find("blocks.0.relu/relu_#1") is not None


def test_ops_link_to_example_lines(reports):
    root = reports["cnn"].tree
    conv1_line = line_of(cnn, "out = self.relu(self.bn1(self.conv1(x)))")
    loop_line = line_of(cnn, "x = block(x)")
    conv = root.find("blocks.1.conv1/convolution#0")
    assert conv.frames[0].file == "cnn.py" and conv.frames[0].line == conv1_line
    assert conv.frames[1].line == loop_line
    attention = reports["transformer"].tree.find("layers.1.attention")
    softmax = next(n for n in attention.walk() if n.name == "_softmax")
    assert softmax.frames[0].line == line_of(transformer, "weights = F.softmax(scores, dim=-1)")
    assert softmax.backward_ms is not None
    assert [s.file for s in reports["cnn"].sources] == ["cnn.py"]
    assert reports["cnn"].sources[0].code == Path(cnn.__file__).read_text()


def test_weight_frames_point_at_definitions(reports):
    weights = {w.name: w for w in reports["mlp"].weights}
    frame = weights["fc2.weight"].frames[0]
    assert (frame.file, frame.line) == ("mlp.py", line_of(mlp, "self.fc2 = nn.Linear"))


def test_backward_is_linked_to_forward_ops(reports):
    for name in ("mlp", "cnn", "transformer", "lstm"):
        root = reports[name].tree
        linked = sum(n.backward_ms or 0 for n in root.walk() if n.kind == "op" and n.forward_ms)
        total = root.backward_ms
        assert total and linked / total > 0.9, (name, linked, total)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_op_windows_fit_in_the_instrumented_iteration(reports, name):
    """CPU ops run one after another, so their windows are disjoint: Σ ≤ the iteration's wall.

    An op timed twice (a composite op and its parts, or a nested dispatch) would break this.
    """
    report = reports[name]
    ops = [n for n in report.tree.walk() if n.kind == "op"]
    total = sum(n.forward_ms + (n.backward_ms or 0.0) for n in ops)
    assert 0 < total <= report.instrumented_ms, (name, total, report.instrumented_ms)
    assert all(n.forward_ms >= 0 and (n.backward_ms or 0.0) >= 0 for n in ops)


def test_json_round_trip_of_a_real_report(reports, tmp_path):
    report = reports["cnn"]
    assert Report.from_dict(report.to_dict()) == report
    path = tmp_path / "report.json"
    report.to_json(path)
    assert Report.from_json(path) == report


def test_tied_weights_count_once():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 16)
            self.out = torch.nn.Linear(16, 50, bias=False)
            self.out.weight = self.embed.weight

        def forward(self, tokens):
            return self.out(self.embed(tokens))

    def iteration_provider(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def iteration(tokens):
            optimizer.zero_grad()
            model(tokens).sum().backward()
            optimizer.step()

        return iteration

    report = profile(
        Tied, lambda batch_size=4: torch.randint(0, 50, (batch_size, 3)), iteration_provider,
        device="cpu", predict=False,
    )
    assert [(w.name, w.bytes, w.grad_bytes) for w in report.weights] == [
        ("embed.weight", 50 * 16 * 4, 50 * 16 * 4)
    ]
    assert report.tree.weight_bytes == 50 * 16 * 4


def test_batch_size_override_and_peak_grows():
    small = run(mlp, batch_size=4)
    large = run(mlp, batch_size=256)
    assert small.batch_size == 4 and large.batch_size == 256
    assert large.peak_bytes > small.peak_bytes
    assert math.isfinite(large.iteration_ms) and large.iteration_ms > 0

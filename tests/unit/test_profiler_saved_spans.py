"""When an op's saved-for-backward bytes were saved and freed (``Node.saved_span``), so that the
code view can say what a line holds at once: a gradient-accumulation step runs its model's
line once per micro-batch, and each micro-batch's backward frees what its forward saved before
the next one saves (``js/src/lines.js`` ``mostAtOnce``). Exact bytes: the saved tensors of an
MLP are its activations, whose sizes the batch sets."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from skyline_nb.profiler.session import profile
from skyline_nb.report import Node, Report


def model_provider() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def input_provider(batch_size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))


def accumulating(micro_batches: int):
    def iteration_provider(model: nn.Module):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()

        def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
            optimizer.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches), strict=True):
                loss_fn(model(xb), yb).backward()
            optimizer.step()

        return iteration

    return iteration_provider


def run(micro_batches: int, batch_size: int) -> Report:
    return profile(model_provider, input_provider, accumulating(micro_batches),
                   batch_size=batch_size, device="cpu", predict=False)


def saving_ops(root: Node) -> list[Node]:
    return [n for n in root.walk() if not n.children and n.activation_bytes > 0]


def clusters(ops: list[Node]) -> list[int]:
    """The saved bytes of each run of overlapping spans, in order."""
    runs: list[tuple[int, float, int]] = []  # (start, end, bytes)
    for op in sorted(ops, key=lambda n: n.saved_span[0]):
        start, end = op.saved_span
        end = float("inf") if end is None else end
        if runs and start < runs[-1][1]:
            first, last, nbytes = runs[-1]
            runs[-1] = (first, max(last, end), nbytes + op.activation_bytes)
        else:
            runs.append((start, end, op.activation_bytes))
    return [nbytes for _, _, nbytes in runs]


@pytest.fixture(scope="module")
def reports(one_thread) -> dict[str, Report]:
    return {"one of 16": run(1, 16), "four of 16": run(4, 64)}


def test_each_micro_batch_saves_what_a_step_of_its_size_saves_and_frees_it_before_the_next(
        reports):
    single = saving_ops(reports["one of 16"].tree)
    whole = sum(n.activation_bytes for n in single)
    assert whole > 0 and all(n.saved_span is not None for n in single)
    assert clusters(single) == [whole]
    # every micro-batch's storages are counted: their addresses are the freed ones' again
    # (a tracker keyed by address alone counted 3 of 4)
    accumulated = saving_ops(reports["four of 16"].tree)
    assert clusters(accumulated) == [whole] * 4
    assert reports["four of 16"].tree.activation_bytes == 4 * whole


def test_spans_are_written_only_on_ops_that_saved_and_read_back(reports, tmp_path):
    report = reports["four of 16"]
    data = report.to_dict()
    stack = [data["tree"]]
    while stack:
        node = stack.pop()
        assert ("saved_span" in node) == (not node["children"] and node["activation_bytes"] > 0)
        stack.extend(node["children"])
    path = tmp_path / "report.json"
    report.to_json(path)
    assert Report.from_json(path) == report

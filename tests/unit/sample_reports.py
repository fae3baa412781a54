"""Hand-built Reports shaped like the profiler's, so exports and serialisation are testable alone.

The tree is a small tied-embedding MLP: modules with ops, two ``blocks.N`` instances kept
apart, a loss op computed in notebook cells (one with an id, one whose front end sent none), an
optimizer node with its own ops, and an untracked remainder with negative memory (the
instrumented sum can exceed the plain run). A few frames lie outside the project root.
Numbers are chosen so sums are exact in binary floating point.
"""

from __future__ import annotations

from skyline_nb.categories import Categories, Category
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.report import (
    BatchSizeSource,
    DeviceInfo,
    Frame,
    Node,
    Report,
    Sample,
    SourceFile,
    WeightEntry,
)

CELL = "c0ffee-cell"


def _op(
    node_id: int,
    path: str,
    forward_ms: float,
    backward_ms: float | None,
    activation_bytes: int,
    frames: list[Frame],
) -> Node:
    name = path.rsplit("/", 1)[1].split("#")[0]
    return Node(node_id, name, path, "op", forward_ms, backward_ms, activation_bytes, frames=frames)


def sample_tree() -> Node:
    """Root → embed, blocks.0, blocks.1, head, loss op, optimizer (with ops), untracked."""
    forward_line = [Frame("model.py", 21), Frame("train.py", 9)]
    embed = Node(
        1,
        "Embedding",
        "embed",
        "module",
        0.25,
        0.5,
        0,
        4096,
        4096,
        children=[
            _op(
                2, "embed/embedding#0", 0.25, 0.5, 0, [Frame("model.py", 18), Frame("train.py", 9)]
            ),
        ],
    )
    blocks = []
    for k, node_id in enumerate((3, 6)):
        blocks.append(
            Node(
                node_id,
                "Linear",
                f"blocks.{k}",
                "module",
                1.5,
                2.25,
                6144,
                1056,
                1056,
                children=[
                    _op(
                        node_id + 1,
                        f"blocks.{k}/addmm#0",
                        1.0,
                        2.0,
                        4096,
                        [Frame("model.py", 19), *forward_line[1:]],
                    ),
                    _op(
                        node_id + 2,
                        f"blocks.{k}/relu_#0",
                        0.5,
                        0.25,
                        2048,
                        [Frame("model.py", 20), Frame("../outside.py", 3), Frame("train.py", 9)],
                    ),
                ],
            )
        )
    head = Node(
        9,
        "Linear",
        "head",
        "module",
        0.75,
        1.0,
        1024,
        0,
        0,
        children=[
            _op(10, "head/mm#0", 0.75, 1.0, 1024, forward_line),
        ],
    )
    loss = _op(
        11,
        "/nll_loss#0",
        0.125,
        0.0625,
        512,
        [Frame("/tmp/ipykernel_1/3.py", 4, CELL), Frame("/tmp/ipykernel_1/8.py", 2)],
    )
    optimizer = Node(
        12,
        "SGD",
        "optimizer",
        "optimizer",
        0.5,
        None,
        children=[
            _op(13, "optimizer/_foreach_add_#0", 0.5, None, 0, [Frame("train.py", 14)]),
        ],
    )
    untracked = Node(14, "untracked", "untracked", "untracked", 8.5625, None, -256)
    children = [embed, *blocks, head, loss, optimizer, untracked]
    return Node(0, "Net", "", "root", 13.1875, 6.0625, 13568, 6208, 6208, children=children)


def sample_weights() -> list[WeightEntry]:
    """``head.weight`` is tied to ``embed.weight``, so named_parameters lists it once."""
    made = [Frame("model.py", 12), Frame("train.py", 30)]
    return [
        WeightEntry("embed.weight", 4096, 4096, made),
        WeightEntry("blocks.0.weight", 1024, 1024, [Frame("model.py", 13), made[1]]),
        WeightEntry("blocks.0.bias", 32, 32, [Frame("model.py", 13), made[1]]),
        WeightEntry("blocks.1.weight", 1024, 1024, [Frame("../vendored/x.py", 5)]),
        WeightEntry("blocks.1.bias", 32, 32, []),
    ]


def sample_report(*, with_models: bool = True) -> Report:
    samples = [Sample(16, 10.5, 1 << 20), Sample(32, 19.25, 1536 * 1024), Sample(64, 37.0, 5 << 19)]
    models = (
        PerformanceModels.from_samples(
            [s.batch_size for s in samples],
            [s.iteration_ms for s in samples],
            [s.peak_bytes for s in samples],
            capacity_bytes=16 << 30,
        )
        if with_models
        else None
    )
    code = "def skyline_input_provider(batch_size=32):\n    return make(batch_size)\n"
    return Report(
        batch_size=32,
        iteration_ms=19.25,
        throughput=32 / 0.01925,
        peak_bytes=1536 * 1024,
        device=DeviceInfo("cpu", "x86_64 (2 threads)", 64 << 30),
        tree=sample_tree(),
        weights=sample_weights(),
        categories=Categories.of({
            Category.WEIGHTS: 6208,
            Category.GRADS: 6208,
            Category.OPTIMIZER: 0,
            Category.ACTIVATIONS: 13568,
            Category.UNTRACKED: -256,
        }),
        samples=samples,
        models=models,
        sources=[
            SourceFile("model.py", "import torch\n"),
            SourceFile("/tmp/ipykernel_1/3.py", code, CELL),
        ],
        source=BatchSizeSource(code, True, "signature_default", 38, 40, 32, CELL),
        instrumented_ms=21.5,
        untracked_ms=8.5625,
        warnings=["sample warning"],
        torch_version="2.13.0+cpu",
    )

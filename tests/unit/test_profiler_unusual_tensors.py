"""Models whose tensors are not all plain strided ones, or that PyTorch runs differently under
the profiler's instrumentation, as users write them: sparse embedding gradients with
``SparseAdam``, a sparse adjacency matrix as an input (a GCN layer), an RNN over a packed
sequence, per-sample gradients with ``torch.func`` (DP-SGD; ``grad`` refuses saved-tensor
hooks, which raised out of the memory run before).

Before ``torch_private.storage_parts`` the first two raised ``NotImplementedError: Cannot access
storage of SparseTensorImpl`` from the peak tracker; a sparse tensor's memory is its index and
value tensors', which every tracker now follows.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from skyline_nb.categories import Category
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.memory_run import OTHER_ROUNDING
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values

VOCAB, DIM, WORDS = 5000, 32, 20


def _sizes(parts: list[torch.Tensor]) -> list[tuple[int, ...]]:
    return [tuple(p.shape) for p in parts]


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_storage_parts_of_each_layout() -> None:
    dense = torch.tensor([[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 0.0],
                          [0.0, 0.0, 4.0, 0.0], [0.0, 5.0, 0.0, 0.0]])
    assert [part is dense for part in tp.storage_parts(dense)] == [True]
    view = dense.t()
    assert [part is view for part in tp.storage_parts(view)] == [True]
    assert _sizes(tp.storage_parts(dense.to_sparse())) == [(2, 5), (5,)]
    assert _sizes(tp.storage_parts(dense.to_sparse_csr())) == [(5,), (5,), (5,)]
    assert _sizes(tp.storage_parts(dense.to_sparse_csc())) == [(5,), (5,), (5,)]
    assert _sizes(tp.storage_parts(dense.to_sparse_bsr((2, 2)))) == [(3,), (4,), (4, 2, 2)]
    assert tp.storage_parts(torch.empty(3, device="meta")) == []
    jagged = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)],
                                        layout=torch.jagged)
    values = max(tp.storage_parts(jagged), key=tp.storage_nbytes)
    assert tp.storage_nbytes(values) == 6 * 3 * 4


class BagOfWords(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, sparse=True)
        self.head = nn.Linear(DIM, 2)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = self.head(self.emb(batch["ids"]).mean(1))
        return {"logits": logits, "loss": F.cross_entropy(logits, batch["labels"])}


def bag_providers() -> tuple:
    def model() -> nn.Module:
        return BagOfWords()

    def inputs(batch_size: int = 64) -> tuple:
        return ({"ids": torch.randint(0, VOCAB, (batch_size, WORDS)),
                 "labels": torch.randint(0, 2, (batch_size,))},)

    def iteration_of(net: BagOfWords):
        sparse = torch.optim.SparseAdam(list(net.emb.parameters()), lr=1e-3)
        dense = torch.optim.SGD(net.head.parameters(), lr=0.1)

        def iteration(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            sparse.zero_grad()
            dense.zero_grad()
            out = net(batch)
            out["loss"].backward()
            sparse.step()
            dense.step()
            return out
        return iteration
    return model, inputs, iteration_of


def _consistent(report) -> None:
    assert impossible_values(report) == []
    assert sum(report.categories.values()) == report.peak_bytes
    other = report.categories[Category.UNTRACKED]
    explained = any("instrumented iteration held" in w for w in report.warnings)
    assert explained == (other < -OTHER_ROUNDING * report.peak_bytes), report.warnings


@pytest.mark.parametrize("budget", [None, 1 << 30])  # a budget adds the live-storage tracker
def test_sparse_embedding_gradients_are_counted_by_their_indices_and_values(budget) -> None:
    batch = 64
    report = profile(*bag_providers(), batch_size=batch, device="cpu", memory_budget=budget)
    _consistent(report)
    nnz = batch * WORDS  # an uncoalesced gradient: one row per looked-up word
    weights = {w.name: w for w in report.weights}
    assert weights["emb.weight"].bytes == VOCAB * DIM * 4
    assert weights["emb.weight"].grad_bytes == nnz * 8 + nnz * DIM * 4
    assert report.categories[Category.OPTIMIZER] >= 2 * VOCAB * DIM * 4  # Adam's two moments
    assert report.models is not None and report.samples[0].batch_size <= batch


class GraphConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, adjacency: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        hidden = F.relu(torch.sparse.mm(adjacency, self.first(features)))
        return torch.sparse.mm(adjacency, self.second(hidden))


def graph_providers() -> tuple:
    def inputs(batch_size: int = 256) -> tuple:
        edges = torch.randint(0, batch_size, (2, 8 * batch_size))
        adjacency = torch.sparse_coo_tensor(edges, torch.rand(edges.shape[1]),
                                            (batch_size, batch_size), check_invariants=True)
        adjacency = adjacency.coalesce()
        return adjacency, torch.randn(batch_size, 16), torch.randint(0, 4, (batch_size,))

    def iteration_of(net: GraphConv):
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)

        def iteration(adjacency, features, labels):
            optimizer.zero_grad()
            F.cross_entropy(net(adjacency, features), labels).backward()
            optimizer.step()
        return iteration
    return GraphConv, inputs, iteration_of


def test_a_sparse_input_counts_as_input_bytes() -> None:
    report = profile(*graph_providers(), batch_size=256, device="cpu", predict=False)
    _consistent(report)
    adjacency, features, labels = graph_providers()[1](256)
    parts = [*tp.storage_parts(adjacency), features, labels]
    assert report.categories[Category.INPUTS] == sum(tp.storage_nbytes(p) for p in parts)


def test_a_packed_sequence_rnn_explains_what_the_dispatch_mode_adds() -> None:
    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(1000, 64)
            self.rnn = nn.GRU(64, 128, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(256, 5)

        def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
            packed = nn.utils.rnn.pack_padded_sequence(self.emb(words), lengths,
                                                       batch_first=True, enforce_sorted=False)
            _, last = self.rnn(packed)
            return self.fc(torch.cat([last[0], last[1]], dim=1))

    def inputs(batch_size: int = 16) -> tuple:
        lengths = torch.randint(5, 40, (batch_size,))
        return (torch.randint(0, 1000, (batch_size, 40)), lengths,
                torch.randint(0, 5, (batch_size,)))

    def iteration_of(net: Tagger):
        optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-3)

        def iteration(words, lengths, labels):
            optimizer.zero_grad()
            F.cross_entropy(net(words, lengths), labels).backward()
            optimizer.step()
        return iteration

    report = profile(Tagger, inputs, iteration_of, batch_size=16, device="cpu", predict=False)
    _consistent(report)
    assert report.categories[Category.UNTRACKED] < 0  # torch 2.13: +542 KB under any mode


def test_per_sample_gradients_with_torch_func_are_profiled_without_saved_tensor_hooks() -> None:
    from torch.func import functional_call, grad, vmap

    def model() -> nn.Module:
        return nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))

    def inputs(batch_size: int = 32) -> tuple:
        return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

        def loss_of_one(params, x, y):
            return F.cross_entropy(functional_call(net, params, (x[None],)), y[None])

        per_sample = vmap(grad(loss_of_one), in_dims=(None, 0, 0))

        def iteration(x, y):  # DP-SGD: clip each sample's gradient, average, add noise
            params = {name: p.detach() for name, p in net.named_parameters()}
            grads = per_sample(params, x, y)
            for name, p in net.named_parameters():
                g = grads[name]
                norms = g.flatten(1).norm(dim=1).clamp(min=1.0)
                p.grad = (g / norms.view(-1, *[1] * (g.dim() - 1))).mean(0)
                p.grad += 0.01 * torch.randn_like(p)
            optimizer.step()
            optimizer.zero_grad()
        return iteration

    report = profile(model, inputs, iteration_of, batch_size=32, device="cpu", predict=False)
    _consistent(report)
    assert any("torch.func" in w for w in report.warnings)
    assert report.categories[Category.ACTIVATIONS] > 0

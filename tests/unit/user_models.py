"""Training steps as deep-learning engineers write them, which stress a profiler in ways the
example models do not: sparse tensors, RNNs over packed sequences, ``torch.func`` transforms,
two optimizers and a double backward, frozen layers, closures run by the optimizer, complex
numbers, parametrized and lazy layers, activation checkpointing, the user's own saved-tensor
hooks; and (``written_steps.py``) updates by hand, two heads, TorchScript, autocast. Each
``NAME()`` returns the three providers; ``ALL`` names them for the tests
(``test_profiler_unusual_tensors.py``) and ``benchmarks/user_steps.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from written_steps import (
    mixed_precision,
    scripted,
    two_heads,
    updated_by_hand,
    updated_from_autograd_grad,
)

Providers = tuple[Callable, Callable, Callable]
VOCAB, DIM, WORDS = 5000, 32, 20


def _step(net: nn.Module, optimizer: torch.optim.Optimizer, loss_of: Callable) -> Callable:
    def iteration(*batch: torch.Tensor) -> None:
        optimizer.zero_grad()
        loss_of(net, *batch).backward()
        optimizer.step()
    return iteration


def _classify(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(net(x), y)


class BagOfWords(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, sparse=True)
        self.head = nn.Linear(DIM, 2)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = self.head(self.emb(batch["ids"]).mean(1))
        return {"logits": logits, "loss": F.cross_entropy(logits, batch["labels"])}


def sparse_embedding() -> Providers:
    """Sparse gradients (``SparseAdam``) beside a dense head (SGD); dict in, dict out."""
    def inputs(batch_size: int = 64) -> tuple:
        return ({"ids": torch.randint(0, VOCAB, (batch_size, WORDS)),
                 "labels": torch.randint(0, 2, (batch_size,))},)

    def iteration_of(net: BagOfWords) -> Callable:
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
    return BagOfWords, inputs, iteration_of


class GraphConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, adjacency: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        hidden = F.relu(torch.sparse.mm(adjacency, self.first(features)))
        return torch.sparse.mm(adjacency, self.second(hidden))


def graph_inputs(batch_size: int = 256) -> tuple:
    """A sparse adjacency matrix over ``batch_size`` nodes, their features and labels."""
    edges = torch.randint(0, batch_size, (2, 8 * batch_size))
    adjacency = torch.sparse_coo_tensor(edges, torch.rand(edges.shape[1]),
                                        (batch_size, batch_size), check_invariants=True)
    return adjacency.coalesce(), torch.randn(batch_size, 16), torch.randint(0, 4, (batch_size,))


def sparse_input() -> Providers:
    """A GCN layer: ``torch.sparse.mm`` with a sparse adjacency matrix as an input."""
    def iteration_of(net: GraphConv) -> Callable:
        def loss_of(model: nn.Module, adjacency, features, labels) -> torch.Tensor:
            return F.cross_entropy(model(adjacency, features), labels)
        return _step(net, torch.optim.Adam(net.parameters(), lr=1e-2), loss_of)
    return GraphConv, graph_inputs, iteration_of


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.rnn = nn.GRU(64, 128, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(256, 5)

    def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(words), lengths, batch_first=True,
                                                   enforce_sorted=False)
        _, last = self.rnn(packed)
        return self.fc(torch.cat([last[0], last[1]], dim=1))


def packed_gru() -> Providers:
    """A bidirectional GRU over a packed sequence, RMSprop and a OneCycle schedule."""
    def inputs(batch_size: int = 16) -> tuple:
        seeded = torch.Generator().manual_seed(batch_size)  # the same batch at each size
        lengths = torch.randint(5, 40, (batch_size,), generator=seeded)
        return (torch.randint(0, 1000, (batch_size, 40), generator=seeded), lengths,
                torch.randint(0, 5, (batch_size,), generator=seeded))

    def iteration_of(net: Tagger) -> Callable:
        optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-3)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, 1e-2, total_steps=10_000)
        step = _step(net, optimizer, lambda m, w, n, y: F.cross_entropy(m(w, n), y))

        def iteration(words, lengths, labels) -> None:
            step(words, lengths, labels)
            schedule.step()
        return iteration
    return Tagger, inputs, iteration_of


def per_sample_gradients() -> Providers:
    """DP-SGD with ``torch.func``: each sample's gradient clipped, averaged, noised."""
    from torch.func import functional_call, grad, vmap

    def model() -> nn.Module:
        return nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))

    def inputs(batch_size: int = 32) -> tuple:
        return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

        def loss_of_one(params, x, y):
            return F.cross_entropy(functional_call(net, params, (x[None],)), y[None])

        per_sample = vmap(grad(loss_of_one), in_dims=(None, 0, 0))

        def iteration(x, y) -> None:
            grads = per_sample({name: p.detach() for name, p in net.named_parameters()}, x, y)
            for name, p in net.named_parameters():
                g = grads[name]
                norms = g.flatten(1).norm(dim=1).clamp(min=1.0)
                p.grad = (g / norms.view(-1, *[1] * (g.dim() - 1))).mean(0)
                p.grad += 0.01 * torch.randn_like(p)
            optimizer.step()
            optimizer.zero_grad()
        return iteration
    return model, inputs, iteration_of


class GAN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.g = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 784), nn.Tanh())
        self.d = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))


def wgan_gradient_penalty() -> Providers:
    """Two optimizers, and a double backward (the gradient penalty's ``create_graph``)."""
    def inputs(batch_size: int = 32) -> tuple:
        return torch.randn(batch_size, 784), torch.randn(batch_size, 64)

    def iteration_of(gan: GAN) -> Callable:
        opt_g = torch.optim.Adam(gan.g.parameters(), 2e-4, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(gan.d.parameters(), 2e-4, betas=(0.5, 0.999))

        def iteration(real: torch.Tensor, z: torch.Tensor) -> float:
            opt_d.zero_grad()
            fake = gan.g(z).detach()
            eps = torch.rand(real.size(0), 1)
            mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
            slope, = torch.autograd.grad(gan.d(mix).sum(), mix, create_graph=True)
            penalty = ((slope.norm(2, dim=1) - 1) ** 2).mean()
            loss_d = gan.d(fake).mean() - gan.d(real).mean() + 10 * penalty
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            loss_g = -gan.d(gan.g(z)).mean()
            loss_g.backward()
            opt_g.step()
            return loss_d.item() + loss_g.item()
        return iteration
    return GAN, inputs, iteration_of


def frozen_finetune() -> Providers:
    """Frozen lower layers, fused AdamW on the rest, gradient clipping, grads set to None."""
    def model() -> nn.Module:
        net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
        for p in list(net.parameters())[:4]:
            p.requires_grad_(False)
        return net

    def inputs(batch_size: int = 64) -> tuple:
        return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        trained = [p for p in net.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trained, lr=1e-3, fused=True)

        def iteration(x, y) -> None:
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(net(x), y).backward()
            nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
        return iteration
    return model, inputs, iteration_of


def channels_last_augmented() -> Providers:
    """Channels-last convolutions with GroupNorm, random crops and flips inside the step."""
    def model() -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32), nn.SiLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.GroupNorm(8, 64), nn.SiLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, 10),
        ).to(memory_format=torch.channels_last)

    def inputs(batch_size: int = 16) -> tuple:
        return torch.randn(batch_size, 3, 40, 40), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True)

        def loss_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            i, j = torch.randint(0, 8, (2,)).tolist()
            x = x[:, :, i:i + 32, j:j + 32]
            flip = torch.rand(x.size(0), 1, 1, 1) < 0.5
            x = torch.where(flip, x.flip(3), x).contiguous(memory_format=torch.channels_last)
            return F.cross_entropy(model(x), y, label_smoothing=0.1)
        return _step(net, optimizer, loss_of)
    return model, inputs, iteration_of


def parametrized_and_lazy() -> Providers:
    """A weight-normed layer (a parametrization) and a ``LazyLinear``."""
    from torch.nn.utils.parametrizations import weight_norm

    def model() -> nn.Module:
        return nn.Sequential(weight_norm(nn.Linear(100, 200)), nn.GELU(), nn.LazyLinear(10))

    def inputs(batch_size: int = 32) -> tuple:
        return torch.randn(batch_size, 100), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        net(torch.randn(2, 100))  # the lazy layer's weights exist before the optimizer's
        return _step(net, torch.optim.Adam(net.parameters(), 1e-3), _classify)
    return model, inputs, iteration_of


def quantization_aware() -> Providers:
    """Eager quantization-aware training: ``prepare_qat`` copies the model and gives each module
    a ``qconfig`` whose observer factories name the module in a closure."""
    from torch.ao.quantization import DeQuantStub, QuantStub, get_default_qat_qconfig, prepare_qat

    def model() -> nn.Module:
        net = nn.Sequential(QuantStub(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10),
                            DeQuantStub())
        net.qconfig = get_default_qat_qconfig("fbgemm")
        return prepare_qat(net.train())

    def inputs(batch_size: int = 32) -> tuple:
        return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        return _step(net, torch.optim.SGD(net.parameters(), 0.01), _classify)
    return model, inputs, iteration_of


def lbfgs_closure(history: int = 5) -> Providers:
    """L-BFGS: the optimizer runs forward and backward itself, in a closure; its state grows by
    up to ``max_iter`` pairs of vectors a step until it holds ``history`` (torch's default 100)."""
    def model() -> nn.Module:
        return nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 1))

    def inputs(batch_size: int = 256) -> tuple:
        return torch.randn(batch_size, 20), torch.randn(batch_size, 1)

    def iteration_of(net: nn.Module) -> Callable:
        optimizer = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=4,
                                      history_size=history)

        def iteration(x, y):
            def closure() -> torch.Tensor:
                optimizer.zero_grad()
                loss = F.mse_loss(net(x), y)
                loss.backward()
                return loss
            return optimizer.step(closure)
        return iteration
    return model, inputs, iteration_of


class Spectral(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, 16, 12, 7, dtype=torch.cfloat) * 0.02)
        self.lift, self.proj = nn.Conv2d(1, 16, 1), nn.Conv2d(16, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lift(x)
        modes = torch.fft.rfft2(h)
        out = torch.zeros_like(modes)
        out[:, :, :12, :7] = torch.einsum("bixy,ioxy->boxy", modes[:, :, :12, :7], self.w)
        return self.proj(F.gelu(torch.fft.irfft2(out, s=h.shape[-2:]) + h))


def complex_fft() -> Providers:
    """A Fourier neural operator's layer: complex weights, ``rfft2``/``irfft2``, AdamW."""
    def inputs(batch_size: int = 8) -> tuple:
        return torch.randn(batch_size, 1, 32, 32), torch.randn(batch_size, 1, 32, 32)

    def iteration_of(net: Spectral) -> Callable:
        return _step(net, torch.optim.AdamW(net.parameters(), 1e-3),
                     lambda m, x, y: F.mse_loss(m(x), y))
    return Spectral, inputs, iteration_of


def checkpointed(reentrant: bool = False) -> Providers:
    """Activation checkpointing per block: non-reentrant (saved-tensor hooks of its own, the
    block re-run at the first unpack) or reentrant (the block re-run inside its own node's
    backward, then a nested backward through the re-run)."""
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(
                nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
                for _ in range(4))
            self.stem = nn.Linear(256, 256)  # a reentrant block's input must require grad
            self.head = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.stem(x)
            for block in self.blocks:
                x = x + checkpoint(block, x, use_reentrant=reentrant)
            return self.head(x)

    def inputs(batch_size: int = 64) -> tuple:
        return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        return _step(net, torch.optim.SGD(net.parameters(), lr=0.01), _classify)
    return Net, inputs, iteration_of


def checkpointed_reentrant() -> Providers:
    """``checkpointed`` the older way (``use_reentrant=True``)."""
    return checkpointed(reentrant=True)


def pruned(held: bool = False) -> Providers:
    """``torch.nn.utils.prune``: a forward pre-hook computes ``weight`` from ``weight_orig``
    and a mask, so the module holds a tensor that is no graph leaf; ``held``: the provider
    returns one model the user keeps."""
    import torch.nn.utils.prune as prune

    def build() -> nn.Module:
        net = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
        prune.l1_unstructured(net[0], "weight", amount=0.5)
        return net

    kept = build() if held else None

    def model() -> nn.Module:
        return kept if kept is not None else build()

    def inputs(batch_size: int = 64) -> tuple:
        return torch.randn(batch_size, 128), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        return _step(net, torch.optim.SGD(net.parameters(), lr=0.01), _classify)
    return model, inputs, iteration_of


def saved_on_cpu() -> Providers:
    """The user's own saved-tensor hooks (``save_on_cpu``) around the forward."""
    def model() -> nn.Module:
        return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))

    def inputs(batch_size: int = 64) -> tuple:
        return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        def loss_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            with torch.autograd.graph.save_on_cpu():
                return F.cross_entropy(model(x), y)
        return _step(net, torch.optim.SGD(net.parameters(), lr=0.01), loss_of)
    return model, inputs, iteration_of


ALL: dict[str, Callable[[], Providers]] = {
    f.__name__: f for f in (
        sparse_embedding, sparse_input, packed_gru, per_sample_gradients,
        wgan_gradient_penalty, frozen_finetune, channels_last_augmented,
        parametrized_and_lazy, lbfgs_closure, updated_by_hand, updated_from_autograd_grad,
        two_heads, scripted, mixed_precision,
        complex_fft, checkpointed, checkpointed_reentrant, pruned, saved_on_cpu)
}

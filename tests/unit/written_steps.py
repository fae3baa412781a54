"""Training steps written out in ways the trackers must recognise (``user_models.ALL`` holds
them): an update by hand without an optimizer, from ``.grad`` or from ``torch.autograd.grad``,
a trunk with two heads and two losses, a TorchScript model, a mixed-precision step (autocast).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

Providers = tuple[Callable, Callable, Callable]


def _step(net: nn.Module, optimizer: torch.optim.Optimizer) -> Callable:
    def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
    return iteration


def _small_net() -> nn.Module:
    return nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))


def _small_inputs(batch_size: int = 32) -> tuple:
    return torch.randn(batch_size, 128), torch.randint(0, 10, (batch_size,))


def updated_by_hand() -> Providers:
    """No optimizer object: the update written out under ``no_grad``, as PyTorch's own tutorials
    do ("What is torch.nn really?"), with a temporary per parameter."""
    def iteration_of(net: nn.Module) -> Callable:
        def iteration(x, y):
            for p in net.parameters():
                p.grad = None
            F.cross_entropy(net(x), y).backward()
            with torch.no_grad():
                for p in net.parameters():
                    p -= 0.1 * p.grad
        return iteration
    return _small_net, _small_inputs, iteration_of


def updated_from_autograd_grad() -> Providers:
    """The same update from the gradients ``torch.autograd.grad`` returns, which are never any
    ``.grad`` (a functional step, as meta-learning code writes it)."""
    def iteration_of(net: nn.Module) -> Callable:
        params = list(net.parameters())

        def iteration(x, y):
            grads = torch.autograd.grad(F.cross_entropy(net(x), y), params)
            with torch.no_grad():
                for p, g in zip(params, grads, strict=True):
                    p -= 0.1 * g
        return iteration
    return _small_net, _small_inputs, iteration_of


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(64, 256), nn.ReLU())
        self.cls, self.reg = nn.Linear(256, 5), nn.Linear(256, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.cls(h), self.reg(h)


def two_heads() -> Providers:
    """A shared trunk with two heads and two losses, ``autograd.backward`` on both: under any
    dispatch mode PyTorch sums the trunk's two gradients into a new buffer (README, limits)."""
    def inputs(batch_size: int = 64) -> tuple:
        return torch.randn(batch_size, 64), torch.randint(0, 5, (batch_size,)), \
            torch.randn(batch_size, 1)

    def iteration_of(net: TwoHeads) -> Callable:
        optimizer = torch.optim.Adam(net.parameters())

        def iteration(x, y, t):
            optimizer.zero_grad()
            scores, value = net(x)
            torch.autograd.backward([F.cross_entropy(scores, y), F.mse_loss(value, t)])
            optimizer.step()
        return iteration
    return TwoHeads, inputs, iteration_of


def scripted() -> Providers:
    """A TorchScript model (``torch.jit.script``), which is trained from a copy."""
    def model() -> nn.Module:
        return torch.jit.script(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)))

    def inputs(batch_size: int = 32) -> tuple:
        return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        return _step(net, torch.optim.SGD(net.parameters(), lr=0.1))
    return model, inputs, iteration_of


def mixed_precision() -> Providers:
    """A step under ``torch.autocast`` (bfloat16 on a CPU, as users train to halve activation
    memory): the forward casts each weight for its matmul, the backward casts the gradients
    back, AdamW updates the float32 weights."""
    def model() -> nn.Module:
        return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                             nn.Flatten(), nn.Linear(16 * 8 * 8, 64), nn.GELU(),
                             nn.Linear(64, 10))

    def inputs(batch_size: int = 16) -> tuple:
        return torch.randn(batch_size, 3, 8, 8), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: nn.Module) -> Callable:
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)

        def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
        return iteration
    return model, inputs, iteration_of

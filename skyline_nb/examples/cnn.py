"""A small ResNet-style CNN: BatchNorm, in-place ReLU, residual blocks run in a ModuleList loop.

The loop matters: Skyline merged the iterations of a loop into one entry; skyline_nb keeps one
node per module instance (``blocks.0``, ``blocks.1``, ...), and the tests check that.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class ResNetSmall(nn.Module):
    def __init__(self, channels: int = 16, blocks: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.blocks = nn.ModuleList(BasicBlock(channels) for _ in range(blocks))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn(self.stem(x)))
        for block in self.blocks:
            x = block(x)
        x = self.pool(x).flatten(1)
        return self.fc(x)


def skyline_model_provider() -> nn.Module:
    return ResNetSmall()


def skyline_input_provider(batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))


def skyline_iteration_provider(model: nn.Module) -> Callable[..., torch.Tensor]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()

    def iteration(images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    return iteration

"""A three-layer MLP classifier: the smallest model worth profiling (Skyline's providers)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, features: int = 256, hidden: int = 512, classes: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def skyline_model_provider() -> nn.Module:
    return MLP()


def skyline_input_provider(batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))


def skyline_iteration_provider(model: nn.Module) -> Callable[..., torch.Tensor]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def iteration(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return iteration

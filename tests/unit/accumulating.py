"""An MLP whose step never zeroes its gradients (they accumulate, alive at any peak), and what
its report must say about them, module by module: shared by the CPU test
(``test_peak_memory.py``) and the CUDA one (``tests/gpu``), so it imports no sibling module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from skyline_nb.categories import Category
from skyline_nb.report import Report


def accumulating_mlp() -> tuple[Callable[..., Any], ...]:
    """Its three providers: the model, inputs of a batch size, the step."""

    def model_provider() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                   torch.nn.Linear(128, 10))

    def input_provider(batch_size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch_size, 64), torch.randint(0, 10, (batch_size,))

    def iteration_provider(model: torch.nn.Module) -> Callable[..., None]:
        def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
            torch.nn.functional.cross_entropy(model(x), y).backward()
        return iteration

    return model_provider, input_provider, iteration_provider


def assert_gradients_by_module(report: Report) -> None:
    """``accumulating_mlp``'s gradients at the peak, module by module, to the byte."""
    first, second = report.tree.find("0"), report.tree.find("2")
    assert first.peak_grad_bytes == (64 * 128 + 128) * 4 == first.weight_bytes
    assert second.peak_grad_bytes == (128 * 10 + 10) * 4 == second.weight_bytes
    assert report.tree.find("1").peak_grad_bytes == 0
    assert report.categories[Category.GRADS] == first.peak_grad_bytes + second.peak_grad_bytes
    again = type(report).from_json(report.to_json())
    assert again.tree.find("0").peak_grad_bytes == first.peak_grad_bytes

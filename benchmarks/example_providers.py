"""The four example models' providers as the benchmarks run them: as shipped (``stock``), or
sized so that an iteration at the starting batch is tens of milliseconds (``bench``: one CPU
core; GPU-bound widths on CUDA), where the stock MLP's 2 ms would be noise and fixed costs.
Shared by ``prediction_accuracy.py`` and the benchmarks that profile the same models."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

MODELS = ("mlp", "cnn", "transformer", "lstm")

# Model sizes for --scale bench: (constructor keyword arguments, input features for the MLP).
BENCH_SIZES: dict[str, dict[str, dict[str, int]]] = {
    "cpu": {"mlp": {"features": 1024, "hidden": 4096}},
    "cuda": {
        "mlp": {"features": 1024, "hidden": 8192},
        "cnn": {"channels": 128},
        "transformer": {"dim": 1024, "heads": 16, "hidden": 4096, "layers": 4},
        "lstm": {"dim": 1024},
    },
}
CLASSES = {"mlp": "MLP", "cnn": "ResNetSmall", "transformer": "TransformerLM", "lstm": "Seq2Seq"}

Providers = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]


def providers(name: str, kind: str, scale: str) -> tuple[Providers, str]:
    """The example's providers, with the benchmark's bigger model where ``scale`` says so."""
    module = importlib.import_module(f"skyline_nb.examples.{name}")
    stock = (module.skyline_model_provider, module.skyline_input_provider,
             module.skyline_iteration_provider)
    sizes = BENCH_SIZES[kind].get(name) if scale == "bench" else None
    if not sizes:
        return stock, "stock"
    kwargs = dict(sizes)
    cls = getattr(module, CLASSES[name])

    def model_provider() -> Any:
        return cls(**kwargs)

    input_provider = module.skyline_input_provider
    if name == "mlp":
        import torch

        features = kwargs["features"]

        def input_provider(batch_size: int = 32) -> tuple[Any, Any]:
            return torch.randn(batch_size, features), torch.randint(0, 10, (batch_size,))

    label = ",".join(f"{k}={v}" for k, v in kwargs.items())
    return (model_provider, input_provider, module.skyline_iteration_provider), label

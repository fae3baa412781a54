"""The four example models' providers as the benchmarks run them: as shipped (``stock``), or
sized so that an iteration at the starting batch is tens of milliseconds (``bench``: one CPU
core; GPU-bound widths on CUDA), where the stock MLP's 2 ms would be noise and fixed costs.
Shared by ``prediction_accuracy.py`` and the benchmarks that profile the same models; with
the test suite's models written by others too (``named_providers``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
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
TESTS = str(Path(__file__).resolve().parents[1] / "tests" / "unit")  # the suite's own models
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


def named_providers(name: str, kind: str = "cpu", scale: str = "stock") -> tuple[Providers, str]:
    """An example's providers (``providers``), or the test suite's models written by others:
    ``gpt`` and ``convnext`` (``tests/unit/styled_models.py``, AdamW, ~1,100 ops an iteration)
    or a Hugging Face model of ``tests/unit/hf_models.py`` (bert, llama, ...; needs
    ``transformers``, a test extra)."""
    if name in MODELS:
        return providers(name, kind, scale)
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    import styled_models

    styled = getattr(styled_models, f"{name}_providers", None)
    if styled is not None:
        return styled(), "styled"
    import hf_models

    if name not in hf_models.ALL:
        raise SystemExit(f"unknown model {name!r}: an example ({', '.join(MODELS)}), gpt, "
                         f"convnext or one of {', '.join(hf_models.ALL)}")
    return hf_models.ALL[name](), "transformers"

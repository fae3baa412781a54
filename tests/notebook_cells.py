"""Notebook cells that more than one test folder runs in a real kernel, and running them."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def mlp_cell(features: int, hidden: int, classes: int, batch_size: int) -> str:
    """One cell with the three providers of a 2-layer MLP (Linear, ReLU, Linear) trained with
    SGD on cross entropy; ``batch_size`` is the input provider's default, the literal a drag
    rewrites."""
    return f'''import torch
from torch import nn


def skyline_model_provider():
    return nn.Sequential(nn.Linear({features}, {hidden}), nn.ReLU(), nn.Linear({hidden}, {classes}))


def skyline_input_provider(batch_size={batch_size}):
    return torch.randn(batch_size, {features}), torch.randint(0, {classes}, (batch_size,))


def skyline_iteration_provider(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def iteration(x, y):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return iteration
'''


def gpt2_cell(batch_size: int, seq: int, **config: int) -> str:
    """One cell with the three providers of a Hugging Face GPT-2 built from a small config
    (``config``: ``GPT2Config``'s arguments; no download), trained with AdamW on its own
    language-model loss over ``seq`` tokens; ``batch_size`` is the input provider's default,
    the literal a drag rewrites."""
    settings = ", ".join(f"{name}={value}" for name, value in config.items())
    return f'''import torch
import transformers

config = transformers.GPT2Config({settings})


def skyline_model_provider():
    return transformers.GPT2LMHeadModel(config)


def skyline_input_provider(batch_size={batch_size}):
    return (torch.randint(0, config.vocab_size, (batch_size, {seq})),)


def skyline_iteration_provider(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def iteration(ids):
        optimizer.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()

    return iteration
'''


# A model small enough that profiling it (with predictions) takes seconds on 2 cores.
SMALL_PROFILED_CELL = "%%skyline --device cpu\n" + mlp_cell(32, 64, 8, 16)


def run_notebook(folder: Path, name: str, cells: list[Any]) -> Path:
    """Write ``cells`` (nbformat cells) as ``folder/name`` with a python3 kernelspec and run it
    as `make demo` does (nbclient, widget state saved); returns the executed copy."""
    import nbformat

    from skyline_nb.demo import execute

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    notebook.cells = cells
    path = folder / name
    nbformat.write(notebook, path)
    out = folder / "out"
    out.mkdir()
    return execute(path, out, timeout=300)


"""Modules the training step holds besides the profiled model, whose memory lands in "other".

An exponential moving average of the weights (``torch.optim.swa_utils.AveragedModel``, the
EMA of diffusion and self-supervised training), a frozen teacher in distillation, the
reference model of preference tuning: the iteration provider builds them beside the model and
the step keeps them in its closure. Their parameters and buffers are alive at the peak, so
they count in it (as in the user's own loop), but they are not the profiled model's: no
category names them and they are "other". An EMA copy of an MLP was 17 % of its step's peak,
"other" with no word why. ``held_warning`` says whose bytes they are.

Tensors the step keeps are named too: a learned prompt or the weights of a multi-task loss
(parameters outside the model, a 50 KiB prompt was "other" with no word why), a constant mask,
the last hidden state carried to the next step.

Found where a step keeps them: the closure of the step function, the attributes of the
object whose method the step is (or of a callable object), and a ``functools.partial``'s
arguments; one level deep
(containers of modules and tensors included), never the model or its own submodules, nor a
tensor of the model's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from skyline_nb.categories import Categories, Category
from skyline_nb.export.units import format_bytes
from skyline_nb.profiler.memory import storage_keys, tensor_bytes
from skyline_nb.profiler.providers import Trial
from skyline_nb.profiler.references import step_items


def held_by_step(trial: Trial) -> list[tuple[str, nn.Module | torch.Tensor, int]]:
    """(name, module or tensor, bytes) for each module the step keeps that is not the model or
    part of it and holds parameters or buffers of its own, and each tensor it keeps that is
    none of those (bytes: each storage once)."""
    model = trial.model if isinstance(trial.model, nn.Module) else nn.Module()
    own = {id(m) for m in model.modules()}
    found: dict[int, tuple[str, nn.Module | torch.Tensor]] = {}
    for name, value in step_items(trial.user_iteration or trial.iteration):
        for label, item in _held(name, value):
            if id(item) not in own and id(item) not in found:
                found[id(item)] = (label, item)
    # a module inside another one found (an EMA's copy of the model) is counted with it
    inner = {id(m) for _, top in found.values() if isinstance(top, nn.Module)
             for m in top.modules() if m is not top}
    seen = storage_keys(_tensors(model))
    held = []
    for label, module in (item for key, item in found.items() if key not in inner):
        size = 0
        for tensor in _tensors(module):
            keys = storage_keys([tensor])
            if keys and not keys & seen:
                seen |= keys
                size += tensor_bytes(tensor)
        if size:
            held.append((label, module, size))
    return held


def held_warning(trial: Trial, categories: Categories) -> str | None:
    """What part of a positive "other" the modules and tensors the step keeps account for, by
    name; one larger than "other" is not in it (a dataset the step's closure names, made before
    the profile: its memory is in no number of the step's)."""
    other = categories[Category.UNTRACKED]
    held = [item for item in (held_by_step(trial) if other > 0 else []) if item[2] <= other]
    if not held:
        return None
    total = sum(size for _, _, size in held)
    parts = ", ".join(f"{type(item).__name__} '{label}' ({format_bytes(size)})"
                      for label, item, size in held)
    modules = [isinstance(item, nn.Module) for _, item, _ in held]
    what = ("modules" if all(modules) else "tensors" if not any(modules)
            else "modules and tensors")
    return (f"\"other\" includes {format_bytes(min(total, other))} held by {what} the step "
            f"keeps besides the model ({parts}): they are in the peak, as in your own loop, "
            "but are not the model's weights")


def _tensors(item: nn.Module | torch.Tensor) -> Iterator[Any]:
    if isinstance(item, torch.Tensor):
        yield item
        return
    yield from item.parameters()
    yield from item.buffers()


def _held(name: str, value: Any) -> Iterator[tuple[str, nn.Module | torch.Tensor]]:
    kept = (nn.Module, torch.Tensor)
    if isinstance(value, kept):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if isinstance(item, kept):
                yield f"{name}[{i}]", item
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, kept):
                yield f"{name}[{key!r}]", item

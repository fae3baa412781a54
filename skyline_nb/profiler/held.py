"""Modules the training step holds besides the profiled model, whose memory lands in "other".

An exponential moving average of the weights (``torch.optim.swa_utils.AveragedModel``, the
EMA of diffusion and self-supervised training), a frozen teacher in distillation, the
reference model of preference tuning: the iteration provider builds them beside the model and
the step keeps them in its closure. Their parameters and buffers are alive at the peak, so
they count in it (as in the user's own loop), but they are not the profiled model's: no
category names them and they are "other". An EMA copy of an MLP was 17 % of its step's peak,
"other" with no word why. ``held_warning`` says whose bytes they are.

Found where a step keeps them: the closure of the step function, the attributes of the
object whose method the step is (or of a callable object), and a ``functools.partial``'s
arguments; one level deep
(containers of modules included), never the model or its own submodules.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import nn

from skyline_nb.categories import Categories, Category
from skyline_nb.export.units import format_bytes
from skyline_nb.profiler.memory import storage_keys, tensor_bytes
from skyline_nb.profiler.providers import Trial
from skyline_nb.profiler.references import step_items


def held_modules(trial: Trial) -> list[tuple[str, nn.Module, int]]:
    """(name, module, bytes) for each module the step keeps that is not the model or part of
    it and holds parameters or buffers of its own (bytes: those, each storage once)."""
    model = trial.model if isinstance(trial.model, nn.Module) else nn.Module()
    own = {id(m) for m in model.modules()}
    found: dict[int, tuple[str, nn.Module]] = {}
    for name, value in step_items(trial.user_iteration or trial.iteration):
        for label, module in _modules(name, value):
            if id(module) not in own and id(module) not in found:
                found[id(module)] = (label, module)
    # a module inside another one found (an EMA's copy of the model) is counted with it
    inner = {id(m) for _, top in found.values() for m in top.modules() if m is not top}
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
    """What part of a positive "other" the modules the step keeps account for, by name."""
    other = categories[Category.UNTRACKED]
    held = held_modules(trial) if other > 0 else []
    if not held:
        return None
    total = sum(size for _, _, size in held)
    parts = ", ".join(f"{type(module).__name__} '{label}' ({format_bytes(size)})"
                      for label, module, size in held)
    return (f"\"other\" includes {format_bytes(min(total, other))} held by modules the step "
            f"keeps besides the model ({parts}): their parameters and buffers are in the peak, "
            "as in your own loop, but are not the model's weights")


def _tensors(module: nn.Module) -> Iterator[Any]:
    yield from module.parameters()
    yield from module.buffers()


def _modules(name: str, value: Any) -> Iterator[tuple[str, nn.Module]]:
    if isinstance(value, nn.Module):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if isinstance(item, nn.Module):
                yield f"{name}[{i}]", item
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, nn.Module):
                yield f"{name}[{key!r}]", item

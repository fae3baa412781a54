"""Memory a training step keeps from one iteration to the next: a leak no peak shows.

A profile measures one iteration's peak. A step that keeps something of every iteration — its
outputs appended to a list for metrics, a forward hook that stores activations — has a fine
peak at iteration three and runs out of memory at iteration three thousand. So level 1 reads
the bytes alive between its warm-up iterations (``Readings.after_step``, young-generation
garbage collected first, so that reference cycles a plain loop's collector would free do not
count) and ``kept_per_step`` says what each iteration added when the last two added about the
same. Lazily made state (an optimizer's buffers at its first step, a cache filled once) grows
once, not at every iteration; a value replaced each iteration (the last loss, kept for logging)
does not grow at all; nor does ``losses.append(loss)`` much: backward frees the graph's saved
tensors, and what stays is the loss itself (its graph's nodes are Python objects).

Which container grows, where the step can be seen to keep one (``containers``: lists, dicts,
deques and sets in its closure, its object's attributes, the globals it names, the same for the
model's hooks and torch's global hooks, and the modules' own attributes; and those among a
dict's values), is named: "the list 'preds' (kept by the step) grows by 1 item".

Where the bytes are read: CUDA, the allocator's counter; CPU, the running sum of the CPU
allocator's reports at a marker allocation of ``ALIVE_BYTES`` (``iteration._tracked_warmup``).
"""

from __future__ import annotations

import gc
import itertools
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from skyline_nb.export.units import format_bytes
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.memory import user_path
from skyline_nb.profiler.providers import Trial
from skyline_nb.profiler.references import reachable
from skyline_nb.profiler.step_peak import mark

# An allocation of this odd size marks "bytes alive now" in the CPU allocator's reports.
ALIVE_BYTES = 4081  # phases.py marks with 4085–4091, step_peak.py with 4093
# What counts as kept per iteration: both of the last two iterations added at least this share
# of the peak (1,000 iterations then double it) and at least MIN_BYTES, and they agree within
# AGREE of each other.
MIN_SHARE, MIN_BYTES, AGREE = 0.001, 1024, 0.25
# Readings needed: after three iterations (the first may make lazy state).
READINGS = 3
# id (a tensor: its label) -> (what it is, the container or None for a tensor, its length or
# element count); a tensor is not held: held, each iteration's replaced one would stay alive
Containers = dict[int | str, tuple[str, Any, int]]
_GROWABLE = (list, dict, set, deque)
# A dict's values looked into for containers: its first this many (a history dict has a few
# keys; a cache keyed by input may have thousands, and is read after every warm-up step).
MAX_KEYS = 64


def between_steps() -> None:
    """Collect the young generations, so that reference cycles made by the step are freed, as
    a plain loop's collector frees them, before the bytes alive are read."""
    gc.collect(1)


def take_readings(events: list[tuple[int, int]]) -> tuple[list[int], list[tuple[int, int]]]:
    """The CPU allocator's running sum (``AllocatorReports.peaks``) at each ALIVE_BYTES mark,
    and the reports without the markers' own (they count in no peak)."""
    live, found, kept = 0, [], []
    for event in events:
        if event[1] == ALIVE_BYTES:
            found.append(live)
        elif event[1] != -ALIVE_BYTES:
            live += event[1]
            kept.append(event)
    return found, kept


@dataclass
class Readings:
    """After each warm-up iteration: the bytes alive (CUDA: read here; CPU: a marker, read from
    the allocator's reports afterwards) and the containers the step keeps."""

    trial: Trial
    device: Device
    alive: list[int] = field(default_factory=list)
    snapshots: list[Containers] = field(default_factory=list)

    def after_step(self) -> None:
        between_steps()
        if self.device.kind == "cuda":
            self.alive.append(int(self.device.memory_allocated() or 0))
        else:
            mark(ALIVE_BYTES)
        try:
            self.snapshots.append(containers(self.trial))
        except Exception:  # the user's objects run their own code when read: naming is a
            self.snapshots.append({})  # courtesy, and a failing one names nothing

    def kept(self, peak_bytes: int) -> tuple[int, list[str]]:
        """Bytes kept per iteration (``kept_per_step``) and what grows with them."""
        kept = kept_per_step(self.alive, peak_bytes)
        try:
            return kept, growing(self.snapshots) if kept else []
        except Exception:  # a container of the user's whose newest item cannot be read
            return kept, []


def kept_per_step(alive: Sequence[int], peak_bytes: int) -> int:
    """Bytes each iteration kept, from the bytes alive after each of at least three
    consecutive iterations: the mean of the last two increases when both are at least
    ``MIN_SHARE`` of ``peak_bytes`` (and ``MIN_BYTES``) and agree within ``AGREE``; else 0."""
    if len(alive) < READINGS:
        return 0
    first, second = alive[-2] - alive[-3], alive[-1] - alive[-2]
    least = max(MIN_BYTES, MIN_SHARE * peak_bytes)
    if min(first, second) < least or abs(first - second) > AGREE * max(first, second):
        return 0
    return (first + second) // 2


def kept_warning(kept: int, peak_bytes: int, growing: Sequence[str] = (),
                 varies: bool = False) -> str | None:
    """What a step that keeps ``kept`` bytes per iteration means for the user's loop, and which
    containers grow with it (``growing``). Where nothing is seen growing and the step ``varies``
    (two batches of one size peaked differently: ``step_peak.varying_warning``), three readings
    do not tell growth from a step that alternates: Adam stepping at every second call read
    +75 KiB twice (its state is twice the gradients), then −75 KiB, +75 KiB, …"""
    if kept <= 0:
        return None
    if varies and not growing:
        return (
            f"the bytes alive after each of three iterations rose by {format_bytes(kept)} each "
            "time, but the step does not do the same work at every call (see the other "
            "warning), so whether its memory keeps growing is not known from these: if it "
            "holds on to tensors of every iteration, keep numbers (loss.item()) instead"
        )
    doubles = max(1, round(peak_bytes / kept))
    where = (f": {'; '.join(growing)}" if growing
             else ", e.g. outputs appended to a list or kept by a hook")
    return (
        f"each iteration keeps {format_bytes(kept)} more alive than the one before: memory "
        f"grows by that at every step of your loop (the peak shown is of an early iteration; "
        f"after {doubles:,} more it is twice as high). The step holds on to tensors of every "
        f"iteration{where}. Keep numbers (loss.item()) or a running total instead"
    )


def containers(trial: Trial) -> Containers:
    """The lists, dicts, deques and sets the step can be seen to keep, with their lengths,
    and the tensors, with their element counts: in its closure, its object's attributes and
    the globals it names, the same for every hook on the model's modules and every global
    hook (``register_module_forward_hook``), the modules' own attributes (a forward that
    stores its activations in ``self.activations``), and the containers among a dict's values
    (``history["preds"].append(out)``)."""
    items = [("kept by the step", item)
             for item in reachable(trial.user_iteration or trial.iteration)]
    for where, module in _named_modules(trial):
        for kind in ("forward_pre", "forward", "backward_pre", "backward"):
            for hook in getattr(module, f"_{kind}_hooks", {}).values():
                owner = f"kept by a {kind.replace('_', '-')} hook on {where}"
                items += [(owner, item) for item in reachable(hook)]
        items += [(f"an attribute of {where}", (name, value))
                  for name, value in vars(module).items() if not name.startswith("_")]
    for registry, hooks in tp.global_hook_registries():
        kind = registry.split("._global_")[-1].removesuffix("_hooks").replace("_", "-")
        for hook in list(hooks.values()):
            items += [(f"kept by a global {kind} hook", item) for item in reachable(hook)]
    found: Containers = {}
    for owner, (name, value) in items:
        for label, container in _growables(name, value):
            if id(container) not in found:
                found[id(container)] = (f"{label} ({owner})", container, len(container))
        if isinstance(value, torch.Tensor):  # ``all_preds = torch.cat([all_preds, out])``
            label = f"the tensor '{name}' ({owner})"
            found.setdefault(label, (label, None, value.numel()))
    return found


def _growables(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """``value`` when it can grow, and the containers among a dict's first ``MAX_KEYS``
    values under plain keys (a history dict keeps its keys while its lists grow)."""
    if not isinstance(value, _GROWABLE):
        return
    kind = type(value).__name__
    yield f"the {kind} '{name}'", value
    if isinstance(value, dict):
        for key, inner in itertools.islice(value.items(), MAX_KEYS):
            if isinstance(key, (str, int)) and isinstance(inner, _GROWABLE):
                yield f"the {type(inner).__name__} under {key!r} in the {kind} '{name}'", inner


def _named_modules(trial: Trial) -> Iterator[tuple[str, torch.nn.Module]]:
    """The model's modules, each with how the report names it."""
    if isinstance(trial.model, torch.nn.Module):
        for name, module in trial.model.named_modules():
            path = user_path(name)
            yield (f"'{path}'" if path else "the model"), module


def growing(snapshots: Sequence[Containers]) -> list[str]:
    """What grew by the same number of items (at least one) over each of the last two
    iterations, its newest item holding a tensor, with that number; or a tensor by the same
    number of elements."""
    if len(snapshots) < READINGS:
        return []
    first, second, third = snapshots[-READINGS:]
    named = []
    for key, (label, value, length) in third.items():
        if key not in first or key not in second:
            continue
        added = length - second[key][2]
        unit = "element" if value is None else "item"
        if (added >= 1 and second[key][2] - first[key][2] == added
                and (value is None or _newest_has_tensor(value))):
            named.append(f"{label} grows by {added:,} {unit}{'s' if added > 1 else ''}")
    return named


def _newest_has_tensor(value: Any) -> bool:
    if isinstance(value, set) or not value:
        return isinstance(value, set) and any(isinstance(v, torch.Tensor) for v in value)
    newest = list(value.values())[-1] if isinstance(value, dict) else value[-1]
    parts = newest.values() if isinstance(newest, dict) else (
        newest if isinstance(newest, (list, tuple)) else (newest,))
    return any(isinstance(part, torch.Tensor) for part in parts)

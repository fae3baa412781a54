"""Who references what: whether the user still holds the model a provider returned (then a
copy is trained: ``providers.build_trial``), and what a step function keeps besides the model
(``held.py``, ``retained.py``).
"""

from __future__ import annotations

import functools
import gc
import inspect
import sys
import types
from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor, nn

from skyline_nb.profiler import torch_private as tp


def user_holds(model: nn.Module) -> bool:
    """True when something besides our local names references the model or its tensors.

    The provider's fresh model is referenced only by us; a model the user keeps in a global has
    more. Parameters are checked too, so a new wrapper around a user-held layer is caught. False
    positives (tied weights) cost a copy, and its memory. Garbage can hold a fresh model: cycles
    (an exception kept in a local; torch's first dispatch mode call, importing dynamo) keep the
    frames that built it while level 1 pauses the collector (``gc_paused``): a kernel's first
    budgeted profile copied a fresh MLP, and the copy ran out. So a model that looks held is
    looked at again after collecting the two young generations, where that garbage is (the
    first ``prepare_qat`` model of a process: its float modules, in cycles with their qconfig
    and holding the same parameters, had outlived a collection of the youngest alone)."""
    return _referenced(model) and _referenced(model, collect=True)


def _referenced(model: nn.Module, collect: bool = False) -> bool:
    """``user_holds``'s count, after collecting the young generations when ``collect``."""
    if collect:
        gc.collect(1)
    # getrefcount: the caller's variable, ``user_holds``'s argument, ours and its own, and
    # what the model holds of itself
    if sys.getrefcount(model) > 4 + _own_references(model):
        return True
    items = [m for _, m in model.named_modules(remove_duplicate=False)][1:]
    items += [p for _, p in model.named_parameters(remove_duplicate=False)]
    appearances = Counter(id(x) for x in items)
    # RNNs keep a second list of their weights (ids only: loop names would add references)
    appearances.update(
        id(w) for x in items for w in (getattr(x, "_flat_weights", None) or [])
    )
    graphs = {id(p) for m in items for p in _computed_from(m)}
    # per appearance: a parent's dict entry + an `items` entry; + `item` + the call's argument;
    # + what a module holds of itself (hooks, a parametrization's closures); + one where a
    # tensor the module computed holds it in its graph
    return any(sys.getrefcount(item) > 2 * appearances[id(item)] + 2 + _own_references(item)
               + (id(item) in graphs) for item in items)


def computed_tensors(module: nn.Module) -> list[Tensor]:
    """Tensors a module holds as plain attributes that it computed from its parameters (no
    graph leaves): pruning's and the old ``weight_norm``'s ``weight``, which a forward
    pre-hook computes again at every call."""
    return [t for t in vars(module).values() if isinstance(t, Tensor) and not t.is_leaf]


def _computed_from(item: Any) -> Iterator[Any]:
    """The parameters whose graph a module's computed tensor holds: pruning's ``weight``
    (``weight_orig`` times a mask, recomputed by a forward pre-hook) keeps ``weight_orig`` in
    its AccumulateGrad node, which torch counts as one more reference to it, so a fresh pruned
    model looked held and was copied (its copy added 150 KiB of "other" to an MLP's peak)."""
    if not isinstance(item, nn.Module):
        return
    nodes = [t.grad_fn for t in computed_tensors(item)]
    seen: set[int] = set()
    while nodes:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = tp.accumulated_variable(node)
        if variable is not None:
            yield variable
        nodes.extend(next_node for next_node, _ in node.next_functions)


def _own_references(item: Any) -> int:
    """References a module holds to itself, which a user's holding it would not explain:
    bound-method hooks (``LazyLinear``'s two) and closures in its class (a parametrization's
    property getters: ``weight_norm``). Counted as held, such a fresh model was copied inside
    level 1's memory window, and the original, alive in its cycles until a full collection,
    added its parameters to every iteration's peak (+81,600 B, 13 % of a weight-normed model's)."""
    if not isinstance(item, nn.Module):
        return 0
    found = 0
    for name, hooks in vars(item).items():
        if name.endswith("hooks") and isinstance(hooks, dict):
            found += sum(getattr(getattr(h, "hook", h), "__self__", None) is item
                         for h in hooks.values())
    functions = [f for attr in vars(type(item)).values()
                 for f in (getattr(attr, "fget", None), getattr(attr, "fset", None))]
    seen: set[int] = set()
    while functions:
        function = functions.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        for _, contents in closure_items(function):
            found += contents is item
            if callable(contents) and hasattr(contents, "__closure__"):
                functions.append(contents)
    return found + _held_through_attributes(item)


# How far ``_held_through_attributes`` looks from a module's attributes, and at most how much
OWN_DEPTH, OWN_OBJECTS = 6, 256


def _held_through_attributes(module: nn.Module) -> int:
    """Closure cells holding ``module`` that its own plain attributes reach (through tuples,
    dicts and objects' attributes, not its submodules or tensors): eager quantization-aware
    training's ``qconfig`` holds observer factories whose closure names the module (for its
    device). Counted as held, a fresh QAT model was copied, and the copy's ``qconfig`` kept the
    original alive: its parameters in every peak, 38,604 B of "other" in a QAT MLP's."""
    found, seen = 0, set()
    stack = [(value, 0) for name, value in vars(module).items() if not name.startswith("_")]
    while stack and len(seen) < OWN_OBJECTS:
        value, depth = stack.pop()
        if (depth > OWN_DEPTH or id(value) in seen
                or isinstance(value, (nn.Module, Tensor, str, bytes, int, float, type))):
            continue
        seen.add(id(value))
        if hasattr(value, "__closure__"):
            for _, contents in closure_items(value):
                found += contents is module
                stack.append((contents, depth + 1))
        elif isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (tuple, list, set, frozenset)):
            stack.extend((v, depth + 1) for v in value)
        elif hasattr(value, "__dict__"):
            stack.extend((v, depth + 1) for v in vars(value).values())
    return found


def closure_items(function: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of each filled cell of a function's closure (none for other objects)."""
    names = getattr(getattr(function, "__code__", None), "co_freevars", ())
    for name, cell in zip(names, getattr(function, "__closure__", None) or (), strict=False):
        try:
            yield name, cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue


def step_items(step: Any) -> Iterator[tuple[str, Any]]:
    """What the step function keeps: closure cells by name, a bound method's (or a callable
    object's) attributes, a partial's arguments (and what its function keeps)."""
    if isinstance(step, functools.partial):
        yield from ((f"argument {i}", v) for i, v in enumerate(step.args))
        yield from step.keywords.items()
        step = step.func
    owner = getattr(step, "__self__", None)
    if owner is None and not hasattr(step, "__code__") and hasattr(step, "__dict__"):
        owner = step  # a callable object: its attributes
    if owner is not None and hasattr(owner, "__dict__"):
        yield from vars(owner).items()
    yield from closure_items(getattr(step, "__func__", step))


def reachable(function: Any, depth: int = 2) -> Iterator[tuple[str, Any]]:
    """``step_items`` and the globals the function's code names, the public attributes of
    the plain objects among them, and the same for the plain functions among them (``depth``
    levels: a step that calls a helper that appends)."""
    kept = list(step_items(function))  # a bound method's object too, before it is unbound
    function = getattr(function, "__func__", function)
    names = getattr(getattr(function, "__code__", None), "co_names", ())
    namespace = getattr(function, "__globals__", {})
    items = [*kept, *((name, namespace[name]) for name in names if name in namespace)]
    yield from items
    for name, value in items:  # a metrics logger the step calls keeps its lists in itself
        if plain_object(value):
            yield from ((f"{name}.{attr}", v) for attr, v in vars(value).items()
                        if not attr.startswith("_"))
    if depth > 1:
        for _, value in items:
            if hasattr(value, "__code__") and value is not function:
                yield from reachable(value, depth - 1)


def plain_object(value: Any) -> bool:
    """An instance of a user's class whose attributes may hold what the step keeps (not a
    function, class or module; not an ``nn.Module``, whose attributes are looked at as the
    model's)."""
    return (isinstance(getattr(value, "__dict__", None), dict)
            and not isinstance(value, (type, types.ModuleType, torch.nn.Module))
            and not inspect.isroutine(value))


def optimizer_over(step: Any, model: nn.Module) -> str | None:
    """The name of an optimizer (or an LR scheduler's) the step reaches (``reachable``) that
    holds ``model``'s parameters: the user's own (``opt`` in a notebook's globals, built over
    the model they keep) where the profile trains a copy of that model, which the optimizer
    never updates while every profiled step zeroed and stepped theirs (an Adam's step count
    5 → 140, its scheduler's learning rate 0.01 → 6e-07, the weights moved)."""
    params = {id(p) for p in model.parameters()}
    for name, value in reachable(step):
        optimizer = getattr(value, "optimizer", value)
        if isinstance(optimizer, torch.optim.Optimizer) and any(
                id(p) in params for group in optimizer.param_groups for p in group["params"]):
            return name
    return None

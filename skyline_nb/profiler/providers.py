"""Loading, checking and calling the three Skyline providers.

``load_providers`` checks shapes before anything heavy runs, so a wrong signature fails in
milliseconds with a message naming the user's cell/line. ``build_trial`` makes what one
measurement needs from scratch: a fresh model (copied when the provider hands out an object the
user still holds, so training it cannot touch theirs), inputs moved once to the device, and the
iteration; user exceptions come back as ``ProviderError`` with the original chained.
"""

from __future__ import annotations

import copy
import gc
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from skyline_nb.profiler.device import Device
from skyline_nb.profiler.errors import (
    InputTypeError,
    ModelOOMError,
    ProviderError,
    ProviderSignatureError,
    in_bytes,
)
from skyline_nb.profiler.memory import tensor_bytes
from skyline_nb.profiler.references import computed_tensors, optimizer_over, user_holds
from skyline_nb.profiler.stacks import UserCode, raised_at


@dataclass
class Providers:
    model: Callable[[], nn.Module]
    inputs: Callable[..., Any]
    iteration: Callable[[nn.Module], Callable[..., Any]]
    default_batch_size: int | None
    user_code: UserCode

    def where(self, function: object) -> str:
        name = getattr(function, "__qualname__", None) or repr(function)
        return f"{name} ({self.user_code.location_of(function)})"


# What the input provider gave, ready to call the iteration with: (args, kwargs, tensors).
Inputs = tuple[tuple[Any, ...], dict[str, Any], list[torch.Tensor]]


@dataclass
class Trial:
    """One fresh model with its inputs and iteration, ready to step."""

    model: nn.Module
    iteration: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    input_tensors: list[torch.Tensor]
    where: str
    # the function the iteration provider returned (``iteration`` wraps it), for what it keeps
    user_iteration: Callable[..., Any] | None = None
    # steps begun, and their count when the CPU allocator last knew the sizes of a whole one's
    # blocks on these inputs (``step_peak.measured_step``: the next one's frees are reported)
    steps: int = 0
    sizes_known_through: int = -1

    def step(self) -> Any:
        self.steps += 1
        return self.iteration(*self.args, **self.kwargs)

    def use_inputs(self, inputs: Inputs) -> None:
        """Train on new inputs (another batch size) from now on; the old ones are dropped."""
        if inputs[2] is not self.input_tensors:  # what the last step kept is the old ones'
            self.sizes_known_through = -1
        self.args, self.kwargs, self.input_tensors = inputs

    def input_grads(self) -> list[torch.Tensor]:
        """The gradients the steps left in the input tensors that require grad (an adversarial
        step's, a saliency map's): of the batch's size, held between iterations as the inputs
        are."""
        return [t.grad for t in self.input_tensors if t.is_leaf and t.grad is not None]

    def held_input_bytes(self) -> int:
        """Bytes of the input tensors and their ``input_grads``, each storage once; not of a
        slice of a tensor the user keeps (``torch_private.borrowed``)."""
        from skyline_nb.profiler import torch_private as tp

        theirs = tp.borrowed(self.input_tensors)
        tensors = [t for t in self.input_tensors if id(t) not in theirs]
        tensors += self.input_grads()
        return sum({key: tp.storage_nbytes(part)
                    for t in tensors for key, part in tp.keyed_parts(t)}.values())

    def take_over_grads(self, old: list[torch.Tensor]) -> None:
        """Give the input tensors what a loop's hold between iterations as ``old`` (the inputs
        trained on before) hold it: a zeroed ``.grad`` of their own shape where the old one in
        the same place has one and they have none yet; the old ones' are dropped (a loop holds
        one batch and its gradients). So a step on new inputs starts as the steady state at
        their size does, without an iteration on them first."""
        for new, previous in zip(self.input_tensors, old, strict=False):
            if new is previous or not previous.is_leaf or previous.grad is None:
                continue
            previous.grad = None
            if new.is_leaf and new.requires_grad and new.grad is None:
                new.grad = torch.zeros_like(new)


def _parameters(function: Callable[..., Any], role: str) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError) as exc:
        raise ProviderSignatureError(
            f"the {role} {function!r} has no inspectable signature"
        ) from exc


def _required(params: list[inspect.Parameter]) -> list[inspect.Parameter]:
    return [
        p for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


def load_providers(
    model_provider: Any, input_provider: Any, iteration_provider: Any, user_code: UserCode
) -> Providers:
    """Check the three providers' shapes; raise ``ProviderSignatureError`` naming what is wrong."""
    for role, function, hint in (
        ("model provider", model_provider, "def skyline_model_provider(): return Net()"),
        ("input provider", input_provider,
         "def skyline_input_provider(batch_size=32): return (x, y)"),
        ("iteration provider", iteration_provider,
         "def skyline_iteration_provider(model): ... return iteration"),
    ):
        if function is None:
            raise ProviderSignatureError(f"no {role} was given; define one like: {hint}")
        if not callable(function):
            raise ProviderSignatureError(
                f"the {role} must be a function, not {type(function).__name__}; e.g. {hint}")
    providers = Providers(model_provider, input_provider, iteration_provider, None, user_code)
    if _required(_parameters(model_provider, "model provider")):
        raise ProviderSignatureError(
            f"the model provider {providers.where(model_provider)} must take no arguments")
    params = _parameters(input_provider, "input provider")
    batch = next((p for p in params if p.name == "batch_size"), None)
    if batch is None or batch.kind is batch.POSITIONAL_ONLY:
        raise ProviderSignatureError(
            f"the input provider {providers.where(input_provider)} needs a `batch_size` parameter "
            "with an integer default, e.g. def skyline_input_provider(batch_size=32)")
    others = [p for p in _required(params) if p.name != "batch_size"]
    if others:
        raise ProviderSignatureError(
            f"the input provider {providers.where(input_provider)} may only require `batch_size`"
            f", but also requires {', '.join(p.name for p in others)}")
    if batch.default is not batch.empty:
        if isinstance(batch.default, bool) or not isinstance(batch.default, int):
            raise ProviderSignatureError(
                f"the input provider {providers.where(input_provider)} has batch_size default "
                f"{batch.default!r}; it must be an integer literal like 32")
        providers.default_batch_size = batch.default
    params = _parameters(iteration_provider, "iteration provider")
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    if len(_required(params)) > 1 or not (positional or variadic):
        raise ProviderSignatureError(
            f"the iteration provider {providers.where(iteration_provider)} must take exactly one "
            "argument, the model, and return the iteration function")
    return providers


def _call(providers: Providers, function: Callable[..., Any], role: str, *args: Any,
          oom: tuple[type[BaseException], ...] = (), **kwargs: Any) -> Any:
    try:
        return function(*args, **kwargs)
    except oom:
        raise
    except Exception as exc:
        raise ProviderError(
            f"the {role} {providers.where(function)} raised {type(exc).__name__}: {exc}"
            f"{raised_at(exc, function)}") from exc


def _to_device(value: Any, device: torch.device, found: list[torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        moved = value.to(device)
        if moved is value and value.is_leaf and value.requires_grad:
            # the provider's own tensor (one the user may keep, e.g. for a saliency map): the
            # steps' gradients go to an alias of it, as its ``.grad`` was the profile's to
            # change (``take_over_grads`` set it to None, the steps summed into it)
            moved = value.detach().requires_grad_()
        found.append(moved)
        return moved
    if isinstance(value, (tuple, list)):
        return type(value)(_to_device(v, device, found) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device, found) for k, v in value.items()}
    return value


def build_trial(providers: Providers, batch_size: int, device: Device) -> Trial:
    """A fresh model, inputs for ``batch_size`` on the device, and its iteration function."""
    oom = device.oom_types
    model, theirs = _fresh_model(providers, device)
    args, kwargs, tensors = make_inputs(providers, batch_size, device)
    iteration = _call(providers, providers.iteration, "iteration provider", model, oom=oom)
    if not callable(iteration):
        raise ProviderError(
            f"the iteration provider {providers.where(providers.iteration)} returned "
            f"{type(iteration).__name__}; it must return the iteration function"
        )
    where = providers.where(iteration)
    _check_arguments(providers, iteration, args, kwargs)
    if theirs is not None and (name := optimizer_over(iteration, theirs)):
        raise ProviderError(
            f"the iteration {where} uses '{name}', an optimizer over the parameters of the "
            f"model you keep ({type(theirs).__name__}), not of the model the iteration provider "
            "is given (a copy, so that profiling does not train yours): it would step your "
            "optimizer and the profile would describe none of your steps. Build the optimizer "
            "inside the iteration provider, from the model it receives: def "
            "skyline_iteration_provider(model): opt = torch.optim.Adam(model.parameters()) …")

    def step(*a: Any, **k: Any) -> Any:
        try:
            return iteration(*a, **k)
        except oom:
            raise
        except Exception as exc:
            raise ProviderError(f"the iteration {where} raised {type(exc).__name__}: {exc}"
                                f"{raised_at(exc, iteration)}") from exc

    # what building left in reference cycles (``quantize_dynamic``'s float copy, a layer made
    # and dropped) a plain loop's collector frees before its steps' peak; level 1 pauses the
    # collector over its window, and its peak held it: 808,232 B where a loop peaks at 173,440
    gc.collect(1)
    return Trial(model, step, args, kwargs, tensors, where, iteration)


def _check_arguments(providers: Providers, iteration: Callable[..., Any], args: tuple,
                     kwargs: dict[str, Any]) -> None:
    """Refuse, before any step, an iteration function that cannot take the inputs as they are
    passed: each value of the input provider's tuple or list as one argument, a dict's items by
    name. A step written for one ``batch`` beside a provider returning ``(x, y)`` otherwise
    failed inside the user's code with "takes 1 positional argument but 2 were given", which
    does not say which side to change. A function without a signature is not checked."""
    try:
        signature = inspect.signature(iteration)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        given = (f"{len(args)} value{'s' if len(args) != 1 else ''}" if not kwargs else
                 f"a dict of {', '.join(map(repr, kwargs))}")
        raise ProviderSignatureError(
            f"the iteration {providers.where(iteration)} cannot take what the input provider "
            f"{providers.where(providers.inputs)} returns ({given}): {exc}. Each value of a "
            "returned tuple or list is passed as one argument and a dict's items by name; to "
            "pass a whole batch as one argument, return it in a 1-tuple: (batch,)") from exc


def _fresh_model(providers: Providers, device: Device) -> tuple[nn.Module, nn.Module | None]:
    """The provider's model on the device, a copy when the user holds it (training must not
    touch theirs), and theirs then; out of memory meanwhile, the model alone does not fit:
    ``ModelOOMError``."""
    oom, model, copied = device.oom_types, None, False
    try:
        model = _call(providers, providers.model, "model provider", oom=oom)
        if not isinstance(model, nn.Module):
            raise ProviderError(f"the model provider {providers.where(providers.model)} returned "
                                f"{type(model).__name__}; it must return a torch.nn.Module")
        theirs = None
        if user_holds(model):
            copied, theirs = True, model
            try:
                model = _copy(model)
            except oom:
                raise
            except Exception as exc:
                raise ProviderError(f"the model provider {providers.where(providers.model)} "
                                    "returned a model that is also used elsewhere and cannot "
                                    "be copied; return a new model on each call") from exc
        return model.to(device.torch_device), theirs
    except oom as exc:
        raise ModelOOMError(_does_not_fit(providers, device, model, copied)) from exc


def _copy(model: nn.Module) -> nn.Module:
    """A copy that trains as the original does. Copied under grad, a TorchScript module's
    parameters come out as clones, not leaves ("can't optimize a non-leaf Tensor" when the
    iteration provider built its optimizer); under no_grad they lose ``requires_grad``.
    A tensor a module computes from its parameters (pruning's ``weight``, and the old
    ``weight_norm``'s, which a forward pre-hook recomputes) is no graph leaf, which deepcopy
    refuses: it is copied detached, and the hook computes it again at the next forward. Its
    graph also holds the parameter, so a fresh pruned model looks held (``user_holds``)."""
    computed = {id(t): t.detach().clone() for m in model.modules() for t in computed_tensors(m)}
    with torch.no_grad():
        copied = copy.deepcopy(model, computed)
    for mine, theirs in zip(copied.parameters(), model.parameters(), strict=True):
        mine.requires_grad_(theirs.requires_grad)
    return copied


def _does_not_fit(providers: Providers, device: Device, model: nn.Module | None,
                  copied: bool) -> str:
    """``ModelOOMError``'s words: the capacity, what the model takes (once built), what to try."""
    budget = device.memory_budget is not None
    what = "it ran out while being built"
    if model is not None:
        tensors = [t for t in (*model.parameters(), *model.buffers()) if not is_lazy(t)]
        what = f"its parameters and buffers take {in_bytes(sum(map(tensor_bytes, tensors)))}"
        if copied:
            what += ", and as it is also used elsewhere a copy is trained: as much again"
    return (f"the model of {providers.where(providers.model)} does not fit in the {device.kind} "
            f"memory {'budget ' if budget else ''}of {in_bytes(device.capacity_bytes())}: {what}; "
            f"try {'a larger memory budget or ' if budget else ''}a smaller model")


def make_inputs(providers: Providers, batch_size: int, device: Device) -> Inputs:
    """The input provider's value for ``batch_size`` on the device: (args, kwargs, tensors)."""
    raw = _call(providers, providers.inputs, "input provider", batch_size=batch_size,
                oom=device.oom_types)
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    if not isinstance(raw, (tuple, list, dict)):
        raise InputTypeError(
            f"the input provider {providers.where(providers.inputs)} returned "
            f"{type(raw).__name__}; return a tensor, or a tuple, list or dict of inputs"
        )
    tensors: list[torch.Tensor] = []
    moved = _to_device(raw, device.torch_device, tensors)
    if not tensors:
        raise InputTypeError(
            f"the input provider {providers.where(providers.inputs)} returned no tensors "
            f"({type(raw).__name__} of {', '.join(type(v).__name__ for v in _values(raw))})"
        )
    if isinstance(moved, dict):
        return (), dict(moved), tensors
    return tuple(moved), {}, tensors


class InputsAtAnySize:
    """``make_inputs`` at any batch size, refusing (``ProviderError``) inputs that do not follow
    it: where no tensor has a size within one element of its size at ``batch_size`` (the
    user's) × n / ``batch_size``, the provider ignores ``batch_size`` or caps it (the rows of a
    smaller dataset), and a sample there would be of another batch than it says (an MLP whose
    provider ignored it was "launch-bound up to 2048"). ``ms`` holds what the last call at each
    size took (wall ms), so that a check of sizes nobody measures can ask what it would cost."""

    def __init__(self, providers: Providers, batch_size: int, device: Device) -> None:
        self.providers, self.batch_size, self.device = providers, batch_size, device
        self.user: list[tuple[int, ...]] = []  # the tensors' sizes at the user's batch, once made
        self.ms: dict[int, float] = {}

    def __call__(self, n: int) -> Inputs:
        start = time.perf_counter()
        try:
            made = make_inputs(self.providers, n, self.device)
        finally:
            self.ms[n] = 1000.0 * (time.perf_counter() - start)
        sizes = [_sizes(t) for t in made[2]]
        if n == self.batch_size:
            self.user[:] = sizes
        elif self.user and not _follows(self.user, self.batch_size, sizes, n):
            raise ProviderError(
                f"the input provider {self.providers.where(self.providers.inputs)} returned "
                f"tensors none of whose sizes follows the batch size: {_shapes(sizes)}, where "
                f"batch size {self.batch_size} gave {_shapes(self.user)}")
        return made


def _sizes(tensor: torch.Tensor) -> tuple[int, ...]:
    """A tensor's sizes; a nested tensor's count of components (a strided one has no sizes,
    a jagged one a symbolic ragged size)."""
    return (tensor.size(0),) if tensor.is_nested else tuple(tensor.shape)


def _follows(user_shapes: list[tuple[int, ...]], user: int, shapes: list[tuple[int, ...]],
             n: int) -> bool:
    """Whether a size of a tensor at n is within one element of that at ``user`` × n / user
    (the provider may return other tensors at other sizes: each pair of the same rank), and
    changed where that moved by a whole element (at ``user`` 1 a size of 1 that stays 1 at 2
    is within one element of 2, and follows nothing)."""
    def follows(x: int, y: int) -> bool:
        return abs(y * user - x * n) <= user and (y != x or abs(x * n - x * user) < user)

    return any(len(a) == len(b) and any(follows(x, y) for x, y in zip(a, b, strict=True))
               for a, b in zip(user_shapes, shapes, strict=False))


def _shapes(shapes: list[tuple[int, ...]]) -> str:
    shown = ", ".join(str(tuple(s)) for s in shapes[:4])
    return shown + (", …" if len(shapes) > 4 else "")


def _values(raw: Any) -> list[Any]:
    return list(raw.values()) if isinstance(raw, dict) else list(raw)

"""Which ops inside an optimizer's step are its own update: the trackers' optimizer phase.

The op tracker (``operations.py``) and the peak tracker (``peak.py``) put every op an
optimizer's ``step`` runs in the optimizer phase: its time on the optimizer's node, kept as
measured when the widget predicts another batch size, and what it allocates as optimizer
temporaries. An optimizer that takes a closure (L-BFGS; sharpness-aware ones) runs the training
step's forward and backward inside its ``step``: those ops are the model's. Seen: L-BFGS's
closure, a 2-layer MLP, drew its forward on the optimizer's node, its backward as unlinked
"AddmmBackward0" ops, its saved activations as "untracked" and none as activations at the peak.

``torch.optim`` runs an update without autograd (grad mode off, unless the optimizer is
``differentiable``) and calls a closure with grad on: an op inside a step with grad on and an
input that requires grad (a parameter, an activation) is the closure's forward. Backward ops are
told by their autograd node, which the trackers check first.

An update written out without an optimizer (``p -= lr * p.grad`` under ``no_grad``, as PyTorch's
tutorials do; a hand-written gradient clipping, ``clip_grad_norm_``, ``zero_grad`` keeping the
tensors) is the optimizer phase too: an op outside every module's forward and without autograd
(grad off, or no input requiring it) on a parameter, a gradient, or what such an op made. Seen
as the forward's: a 2-layer MLP's update drew on its root's forward (a third of the step, scaled
with the batch when the widget predicts) and its temporaries, the step's peak, were
"activations". A forward under ``no_grad`` (an evaluation) runs inside modules and stays one.
Gradients that ``torch.autograd.grad`` returns for the parameters are gradients too
(``returned``, told by a hook on each parameter, which autograd calls for ``.backward()`` and
``autograd.grad`` alike): a step that updates from them (``p.sub_(lr * g)``) drew ``lr * g``
on its forward and that temporary, its peak, as "activations".
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.leaves import tensors_in


class OptimizerSteps:
    """The optimizer steps running now (nested: a step may call another's), for the hooks
    ``torch_private.register_optimizer_step_hooks`` calls."""

    def __init__(self, parameters: Iterable[torch.Tensor] = ()) -> None:
        self._differentiable: list[bool] = []  # one per step running, innermost last
        self._parameters = list(parameters)
        self._weights = {key for p in self._parameters for key, _ in tp.keyed_parts(p)}
        self._grads: set[int] | None = None  # their gradients' storages, read once per update
        self._made: dict[int, weakref.ref[torch.Tensor]] = {}  # outputs of updates by hand

    @property
    def depth(self) -> int:
        return len(self._differentiable)

    def enter(self, optimizer: Any, *_: Any) -> None:
        defaults = getattr(optimizer, "defaults", None)
        self._differentiable.append(bool(isinstance(defaults, dict)
                                         and defaults.get("differentiable", False)))

    def leave(self, *_: Any) -> None:
        if self._differentiable:
            self._differentiable.pop()

    def runs_update(self, inputs: Any, out: Any = (), in_module: bool = False) -> bool:
        """Whether an op (not a backward one) on ``inputs`` (its arguments) that returned
        ``out`` is an update: inside a step, and not the forward of a closure it calls (grad
        on, an input requiring grad), unless the optimizer itself is differentiable (its update
        then runs with grad on too); outside every step, one written by hand (module doc);
        ``in_module``: a module's forward is running."""
        if not self._differentiable:
            return self._by_hand(inputs, out, in_module)
        if self._differentiable[-1] or not torch.is_grad_enabled():
            return True
        return not any(t.requires_grad for t in tensors_in(inputs))

    def _by_hand(self, inputs: Any, out: Any, in_module: bool) -> bool:
        # most ops run inside a module's forward: decided without flattening their arguments
        tensors = None if in_module else tensors_in(inputs)
        if tensors is None or (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            self._grads = None  # the update is over (or not begun): gradients may change
            return False
        if not any(self._made_here(t) for t in tensors):
            if self._grads is None:
                self._grads = {key for p in self._parameters if p.grad is not None
                               for key, _ in tp.keyed_parts(p.grad)}
            seeds = self._weights | self._grads
            if not any(key in seeds for t in tensors for key, _ in tp.keyed_parts(t)):
                return False
        for tensor in tensors_in(out):
            self._made[id(tensor)] = weakref.ref(tensor)
        return True

    def returned(self, grad: torch.Tensor) -> None:
        """Autograd computed ``grad`` for one of the parameters: a seed of an update by hand
        for as long as it lives (a temporary that backward adds to ``.grad`` dies at once)."""
        self._made[id(grad)] = weakref.ref(grad)

    def _made_here(self, tensor: torch.Tensor) -> bool:
        ref = self._made.get(id(tensor))
        return ref is not None and ref() is tensor


def gradient_hooks(parameters: Iterable[torch.Tensor],
                   seen: Callable[[torch.Tensor, torch.Tensor], None]) -> list[Any]:
    """A hook on each parameter that requires grad, calling ``seen(parameter, gradient)``
    whenever autograd computes its gradient (before ``.backward()`` accumulates it, or as
    ``torch.autograd.grad`` returns it); the gradient is left as it is. Handles to remove."""
    def hook(param: torch.Tensor) -> Callable[[torch.Tensor], None]:
        return lambda grad: seen(param, grad)

    return [p.register_hook(hook(p)) for p in parameters if p.requires_grad]

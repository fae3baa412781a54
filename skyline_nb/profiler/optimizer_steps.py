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
"""

from __future__ import annotations

from typing import Any

import torch

from skyline_nb.profiler.leaves import tensors_in


class OptimizerSteps:
    """The optimizer steps running now (nested: a step may call another's), for the hooks
    ``torch_private.register_optimizer_step_hooks`` calls."""

    def __init__(self) -> None:
        self._differentiable: list[bool] = []  # one per step running, innermost last

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

    def runs_update(self, inputs: Any) -> bool:
        """Whether an op (not a backward one) on ``inputs`` (its arguments) is the update of a
        step running now: inside a step, and not the forward of a closure it calls (grad on, an
        input requiring grad), unless the optimizer itself is differentiable (its update then
        runs with grad on too)."""
        if not self._differentiable:
            return False
        if self._differentiable[-1] or not torch.is_grad_enabled():
            return True
        return not any(t.requires_grad for t in tensors_in(inputs))

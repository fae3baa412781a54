"""Floating-point operations per op, counted with PyTorch's own formulas.

``torch.utils.flop_counter`` holds a formula per aten op (matmuls, convolutions, attention and
their backward ops), the ones ``FlopCounterMode`` sums. This tracker applies the same formulas
during the memory run (no extra iteration; riding the op tracker's dispatch mode, ``op_mode.py``)
and attributes each count to the forward op running then, or, in backward, to the forward op
whose backward runs (``where``). Ops without a
formula (element-wise, reductions, the optimizer's updates) count 0, as in ``FlopCounterMode``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.leaves import tensors_in


class FlopTracker:
    """FLOPs by forward op index: ``forward[i]``, ``backward[i]``; ``unplaced`` for ops that
    ran where no forward op can be named (e.g. the loss computed outside the model before any
    op was recorded). It rides the op tracker's dispatch mode (``op_mode.OpRider``)."""

    def __init__(self, where: Callable[[], tuple[int, str, str] | None]) -> None:
        self.where = where
        self.forward: dict[int, int] = {}
        self.backward: dict[int, int] = {}
        self.unplaced = 0
        # bytes the counted ops read and wrote (their tensor inputs and outputs), by op index
        self.moved: dict[int | None, int] = {}
        self._formulas = tp.flop_formulas()

    def before_op(self) -> None:
        return None

    def after_op(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any,
                 before: None) -> None:
        """Count the op's FLOPs where it ran, with the bytes it read and wrote."""
        formula = self._formulas.get(func.overloadpacket)
        if formula is not None:
            count = int(formula(*args, **kwargs, out_val=out))
            place = self.where()
            index = None if place is None else place[0]
            if index is None:
                self.unplaced += count
            else:
                into = self.backward if tp.current_autograd_node() is not None else self.forward
                into[index] = into.get(index, 0) + count
            moved = sum(t.numel() * t.element_size() for t in tensors_in((args, kwargs, out)))
            self.moved[index] = self.moved.get(index, 0) + moved

    @property
    def total(self) -> int:
        return sum(self.forward.values()) + sum(self.backward.values()) + self.unplaced

"""Why a trunk that feeds two heads reads "other" below zero: where autograd sums two gradients.

Where a tensor feeds two ops, backward sums the gradients its consumers send it. The engine adds
one into the other in place only when the buffer is a plain tensor that nothing else holds
(``can_accumulate_inplace`` in torch's ``input_buffer.cpp``: not subclass-like, and its
TensorImpl and StorageImpl each held once); otherwise it adds them into a new buffer. Under any
Python dispatch mode every tensor is subclass-like. The memory run therefore holds one gradient
more at that moment than the user's plain loop, and where that moment is the peak, "other"
(plain peak − instrumented) is negative by that much (README, limits).

A way around the first condition exists: the engine sums a node's outputs after the node's
post-hooks, inside the same task, and before each task it restores the thread's dispatch mode
stack; a post-hook that pops the mode lets the sums run without it. This script measures
whether that would be enough for the profiler's trackers: the allocator's peak (its own
reports, ``step_peak.allocator_events``) of one warm iteration of ``written_steps.two_heads``,

- plain: no mode;
- mode: a no-op dispatch mode;
- mode+pop: the same with a post-hook on every node of the graph that pops it;
- storages+pop: a no-op mode that only asks each output for its storage object
  (``untyped_storage()``), as every tracker of the profiler must (storage keys, finalizers);
- tracker+pop: the profile's peak tracker (``peak.PeakTracker``), popped the same way.

    PYTHONPATH=$PWD python benchmarks/gradient_sums.py
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

import torch
import torch.nn.functional as F
import written_steps
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode, _pop_mode

from skyline_nb.profiler.memory import named_tensors
from skyline_nb.profiler.peak import PeakTracker
from skyline_nb.profiler.step_peak import MARK_BYTES, allocator_events, mark


class Noop(TorchDispatchMode):
    def __init__(self, touch_storages: bool = False) -> None:
        super().__init__()
        self.touch_storages = touch_storages

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.touch_storages and isinstance(out, torch.Tensor):
            out.untyped_storage()
        return out


def main() -> None:
    model_class, inputs, _ = written_steps.two_heads()
    torch.manual_seed(0)
    model, (x, y, t) = model_class(), inputs(64)
    optimizer = torch.optim.Adam(model.parameters())

    def step(mode: Any = None) -> None:
        optimizer.zero_grad()
        scores, value = model(x)
        losses = [F.cross_entropy(scores, y), F.mse_loss(value, t)]
        handles = [node.register_hook(_popper(mode)) for node in _nodes(losses)] if mode else []
        torch.autograd.backward(losses)
        optimizer.step()
        for handle in handles:
            handle.remove()

    def peak(make: Callable[[], Any] | None, pop: bool) -> int:
        with allocator_events() as allocator:
            step()
            mark()
            mode = make() if make is not None else None
            with mode if mode is not None else contextlib.nullcontext():
                step(mode if pop else None)
        return allocator.peak(after_bytes=MARK_BYTES)

    for _ in range(3):
        step()
    tracker = lambda: PeakTracker(torch.device("cpu"), named_tensors(model, [x, y, t], []))  # noqa: E731
    rows = [("plain", None, False), ("mode", Noop, False), ("mode+pop", Noop, True),
            ("storages+pop", lambda: Noop(touch_storages=True), True),
            ("tracker+pop", tracker, True)]
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads: allocator peak of "
          "one warm iteration of written_steps.two_heads, bytes")
    for name, make, pop in rows:
        print(f"{name:14s} {peak(make, pop):>9,d}")


def _popper(mode: Any) -> Callable[..., None]:
    def after_node(*_: Any) -> None:
        if _get_current_dispatch_mode() is mode:
            _pop_mode()
    return after_node


def _nodes(roots: list[torch.Tensor]) -> list[Any]:
    """Every node of the graph behind ``roots``."""
    seen: dict[int, Any] = {}
    todo = [r.grad_fn for r in roots]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        todo.extend(next_node for next_node, _ in node.next_functions)
    return list(seen.values())


if __name__ == "__main__":
    main()

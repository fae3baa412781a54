"""Where an iteration's phases start: marked in the CPU allocator's reports, or read off the CUDA
allocator's peak.

A training step's peak memory is the largest of its phases' (forward, the loss, backward, the
optimizer step), and each phase's own high-water mark grows in a straight line with the batch,
at its own slope. Which phase holds the peak can change between batch sizes; a line through the
step's peaks at two sizes on either side of that change has neither phase's slope. Seen: the
example LSTM at batch 8 peaks in the model's backward, from 16 on in the loss phase (the
log-softmax backward over its vocabulary); the line through its peaks at 8 and 16 predicted
4–8 % too little at 24–64, while the loss phase's own line through the same two sizes is exact
there (BENCHMARKS.md, "Memory by phase"). So each sampled size records its peak per phase, and
the memory model is the largest of the phases' lines (``models.memory_curve.fit_memory``).

While ``PhaseMarks`` is entered, the model's forward starting and ending, backward reaching the
model's outputs, that backward pass ending, and an optimizer step starting each call its ``mark``.
On CPU (the default) that allocates a marker of an odd size that no iteration is expected to
allocate (``LABELS``); ``AllocatorReports.peaks`` then splits the running sum at them. On CUDA,
``CudaPhasePeaks`` reads the caching allocator's peak since the last mark and resets it there (the
allocator keeps its books on the host, in the order the host asks, so a hook's reading is the
phase's own whatever the kernels still queued). So the step falls into four phases: ``forward``
(the model's), ``loss`` (what runs between the model's forward and its backward: a loss computed
outside the model, and that loss's own backward, e.g. log-softmax's), ``backward`` (from the
model's outputs on) and ``optimizer`` (from the end of that backward pass: an optimizer's step, or
an update written by hand). Nothing is left on the user's model or optimizers afterwards.

Known limitations: a model whose output holds no tensor that requires grad (a step that calls
submodules directly) gets no backward mark, so its loss and backward form one phase; a model
that takes no hooks (a TorchScript module) gets none but the optimizer's, so everything before
the optimizer step is one phase, as every step was before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.peak import BACKWARD, FORWARD, OPTIMIZER

LOSS = "loss"
_MARK_BYTES = {FORWARD: 4091, LOSS: 4085, BACKWARD: 4089, OPTIMIZER: 4087}
LABELS: dict[int, str] = {nbytes: phase for phase, nbytes in _MARK_BYTES.items()}
# The part of a step before its model's forward starts (inputs moved, gradients zeroed)
FIRST = FORWARD
_MAX_DEPTH = 8  # of nested outputs searched for tensors


def _mark(phase: str) -> None:
    with tp.outside_modes():  # not an op of the user's step: no tracker records it
        torch.empty(_MARK_BYTES[phase], dtype=torch.uint8)


class PhaseMarks:
    """``with PhaseMarks(model):`` marks each phase of the steps run inside (module doc);
    ``mark(phase)`` is called where a phase starts (default: the CPU allocator's marker)."""

    def __init__(self, model: Any, mark: Callable[[str], None] = _mark) -> None:
        self.model = model
        self.mark = mark
        self._handles: list[Any] = []
        self._ending = False  # the backward pass's end is awaited
        self._phase: str | None = None  # the last one marked

    def __enter__(self) -> PhaseMarks:
        self._handles = tp.register_optimizer_step_hooks(lambda *_: self._enter(OPTIMIZER),
                                                          lambda *_: None)
        if isinstance(self.model, torch.nn.Module):
            try:
                self._handles.append(
                    self.model.register_forward_pre_hook(lambda *_: self._enter(FORWARD)))
                self._handles.append(self.model.register_forward_hook(self._mark_outputs))
            except RuntimeError:  # a ScriptModule takes no hooks: one phase before the step
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _enter(self, phase: str) -> None:
        """Mark ``phase`` unless it is the one running (an optimizer's step after the backward
        pass ended, a second output reached)."""
        if phase != self._phase:
            self._phase = phase
            self.mark(phase)

    def _mark_outputs(self, _module: Any, _args: Any, output: Any) -> None:
        """The model's forward ends (what follows until backward reaches any of its outputs is
        the loss phase); backward reaching any of them marks the backward phase."""
        self._enter(LOSS)
        for tensor in _tensors(output, _MAX_DEPTH):
            if tensor.grad_fn is not None:
                tensor.grad_fn.register_prehook(self._backward_reached)

    def _backward_reached(self, _grads: Any) -> None:
        """Backward reached the model's outputs: its phase, until the pass ends; what follows it
        is the update's phase, whether an optimizer steps or it is written by hand (``p -= lr *
        p.grad``: no step hook marks that one, and its peak read "in the model's backward")."""
        self._enter(BACKWARD)
        if not self._ending:
            self._ending = True
            tp.at_backward_end(self._backward_ended)

    def _backward_ended(self) -> None:
        self._ending = False
        self._enter(OPTIMIZER)


class CudaPhasePeaks:
    """Per-phase peaks of one step on CUDA, relative to ``before`` (the bytes allocated when the
    step began): ``mark`` is ``PhaseMarks``' callback; ``close()`` ends the last phase and
    returns the peaks, by phase, as ``AllocatorReports.peaks`` does on CPU (a phase entered
    twice keeps its larger peak; the part before the model's forward is ``FIRST``'s)."""

    def __init__(self, device: Any, before: int) -> None:
        self.device, self.before = device, before
        self.phase = FIRST
        self.by_phase: dict[str, int] = {}

    def mark(self, phase: str) -> None:
        peak = int(self.device.max_memory_allocated() or 0) - self.before
        self.by_phase[self.phase] = max(self.by_phase.get(self.phase, peak), peak)
        self.device.reset_peak()  # the next phase's peak starts at what is allocated now
        self.phase = phase

    def close(self) -> dict[str, int]:
        self.mark(self.phase)
        return self.by_phase


def _tensors(value: Any, depth: int) -> Iterator[torch.Tensor]:
    """Tensors in an output: nested tuples, lists and mappings (a transformers ModelOutput is
    an ordered dict)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth > 0 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item, depth - 1)
    elif depth > 0 and isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item, depth - 1)


def shifted(peaks: Mapping[str, int], by: int) -> dict[str, int]:
    """Per-phase peaks of one step moved by ``by`` bytes (from what the step added to the
    absolute peak, as ``WarmTrial.peak_at`` moves the step's total)."""
    return {phase: value + by for phase, value in peaks.items()}

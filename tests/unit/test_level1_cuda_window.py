"""Level 1's memory window on CUDA, on a scripted allocator (CI has no GPU; the same on a real
one: ``tests/gpu/test_cuda_profiler.py::test_the_inputs_count_once_in_the_peak``).

On CUDA the user's peak is the allocator's peak over building the trial and its warm-up,
minus what was allocated before. The reference step's inputs (fresh inputs at the user's
batch) were made inside that window, beside the trial's own, so the peak counted two sets of
inputs where a user's loop holds one: on an H100 and an H200, "other" equalled "inputs" in every
model (BENCHMARKS.md, session 14).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from skyline_nb.profiler import iteration
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.providers import Trial


class Ledger:
    """Bytes of the tensors it tracks while they live, and the peak since the last reset."""

    def __init__(self) -> None:
        self.current = self.peak = 0

    def track(self, tensor: torch.Tensor) -> torch.Tensor:
        size = tensor.numel() * tensor.element_size()
        self.current += size
        self.peak = max(self.peak, self.current)
        weakref.finalize(tensor, self._free, size)
        return tensor

    def _free(self, size: int) -> None:
        self.current -= size


@dataclass
class ScriptedCuda(Device):
    """A CUDA device as level 1 sees it, with the ledger as its caching allocator."""

    ledger: Ledger | None = None
    kind = "cuda"

    def memory_allocated(self) -> int | None:
        return self.ledger.current

    def max_memory_allocated(self) -> int | None:
        return self.ledger.peak

    def reset_peak(self) -> None:
        self.ledger.peak = self.ledger.current

    def make_library_workspaces(self) -> None:
        pass


def test_the_user_batch_counts_one_set_of_inputs() -> None:
    ledger = Ledger()
    device = ScriptedCuda(torch.device("cpu"), ledger=ledger)
    temporary = 4096  # bytes each step allocates and frees

    def inputs_for(n: int):
        x = ledger.track(torch.zeros(n, 64))
        return (x,), {}, [x]

    def build() -> Trial:
        model = torch.nn.Linear(64, 64)
        for p in model.parameters():
            ledger.track(p)
        trial = Trial(model, lambda x: ledger.track(torch.zeros(temporary // 4)).sum(), (), {},
                      [], "test")
        trial.use_inputs(inputs_for(16))
        return trial

    result, warm = iteration.measure_level1(build, device, 16, inputs_for=inputs_for)
    weights = (64 * 64 + 64) * 4
    inputs = 16 * 64 * 4
    assert result.peak_bytes == weights + inputs + temporary  # one set, not two
    assert warm.user_step_peak == temporary

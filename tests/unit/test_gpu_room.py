"""A GPU's room for the profile's steps (``device.gpu_room_bytes``): what its driver has free
plus what this process's caching allocator holds unused, less what it hands out, read when the
profile begins; never the device's total, which on a GPU another kernel shares offered batch
sizes that cannot fit. The CUDA calls are faked here (no GPU on CI); the same path on a real
one: ``pytest tests/gpu``."""

from __future__ import annotations

import pytest
import torch

from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler import device

GIB = 1 << 30


def _driver(monkeypatch: pytest.MonkeyPatch, free: int, reserved: int, allocated: int) -> None:
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (free, 80 * GIB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda index=None: reserved)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda index=None: allocated)


def test_a_shared_gpus_room_is_what_this_kernel_can_still_take(monkeypatch) -> None:
    # another kernel holds most of the 80 GiB; this one caches 3 GiB, 2 of them its user's tensors
    _driver(monkeypatch, free=15 * GIB, reserved=3 * GIB, allocated=2 * GIB)
    gpu = device.CudaDevice(torch.device("cuda", 0))
    assert gpu.capacity_bytes() == gpu.sampling_capacity_bytes() == 16 * GIB
    # read when the profile began: its own steps' memory since is not taken from the room
    _driver(monkeypatch, free=5 * GIB, reserved=13 * GIB, allocated=8 * GIB)
    assert gpu.capacity_bytes() == 16 * GIB
    # a budget binds where it is smaller than the room, and no further
    assert device.CudaDevice(torch.device("cuda", 0), 4 * GIB).capacity_bytes() == 4 * GIB
    assert device.CudaDevice(torch.device("cuda", 0), 40 * GIB).capacity_bytes() == 10 * GIB


def test_the_drag_on_a_shared_gpu_ends_where_its_room_does(monkeypatch) -> None:
    _driver(monkeypatch, free=15 * GIB, reserved=3 * GIB, allocated=2 * GIB)
    room = device.CudaDevice(torch.device("cuda", 0)).capacity_bytes()
    sizes = [16, 32, 64]
    models = PerformanceModels.from_samples(
        sizes, [10.0 + 0.5 * n for n in sizes], [GIB + n * 64 * 2**20 for n in sizes], room,
        memory_bound=True)
    top = models.max_batch_size()
    assert models.predict_peak_bytes(top) <= room < models.predict_peak_bytes(top + 1)
    assert top == 240  # (16 GiB − 1 GiB) / 64 MiB; the total (80 GiB) allowed 8 × 64 = 512

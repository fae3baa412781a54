"""The device's roofline: peak FLOP/s and memory bandwidth, for "% of attainable" per module.

A module doing F FLOPs while moving B bytes (its ops' inputs and outputs) in t seconds achieves
F/t; the most it could achieve is min(peak FLOP/s, F/B × bandwidth) (the roofline model, as
XSP shows it per layer). The peaks are measured once per process and device (a kernel keeps
them for its life):

- CPU: a float32 matmul big enough to run at the BLAS's best (1024², at torch's thread count)
  and a copy of a buffer larger than the caches, each repeated for about 0.1 s; the best run
  counts (the peak, not the typical);
- CUDA: the same measurement on the device (tensor cores are not used by float32 matmuls
  unless TF32 is on, so it is the FP32 peak the user's float32 model can reach).

A peak measured while something else held the cores (the browser rendering beside the kernel,
a slow phase of a shared host) is too low, and a module then shows more than 100 % of what is
"attainable": seen in CI, a 1024² Linear at 154 %. So the peak FLOP/s is also the best any
module of a profile was seen to reach (over at least ``EVIDENCE_MS``, above the timers' noise),
and the raised peak is kept for the next profiles. The bandwidth is not raised that way: a
module can beat the memory roof legitimately, when its data stays in the caches. So a
measurement whose threads waited for a CPU (``cpuwait``: more than ``timing.QUIET_WAIT`` of it)
is not final: the next profiles measure again, up to ``TRIES`` in all, and each peak kept is
the best of the tries. Seen: a kernel whose first profile ran beside a busy process of another
session measured 38.4 GFLOP/s and 10.1 GB/s, 315 GFLOP/s and 28.5 GB/s quiet (BENCHMARKS.md,
session 43); without this, both stayed for the kernel's life.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.timing import QUIET_WAIT

MATMUL_N = 1024
COPY_BYTES = 64 << 20
BUDGET_S = 0.1  # per measurement
EVIDENCE_MS = 1.0
TRIES = 3  # measurements of a device's peaks at most, while they ran on a busy machine


@dataclass(frozen=True)
class Roofline:
    peak_flops: float  # FLOP/s
    bandwidth: float  # bytes/s


_measured: dict[tuple[str, int], Roofline] = {}
_busy_tries: dict[tuple[str, int], int] = {}  # measurements so far that ran on a busy machine


def _key(device: Device) -> tuple[str, int]:
    return device.kind, torch.get_num_threads()


def measure(device: Device) -> Roofline:
    """Measure the device's peaks (again, where the tries so far ran on a busy machine), and
    keep the best of each over the tries."""
    key = _key(device)
    flops, flops_busy = _best_rate(device, _matmul)
    bandwidth, copy_busy = _best_rate(device, _copy)
    if key in _measured:
        kept = _measured[key]
        flops, bandwidth = max(flops, kept.peak_flops), max(bandwidth, kept.bandwidth)
    _measured[key] = Roofline(flops, bandwidth)
    tries = _busy_tries.pop(key, 0) + 1
    if (flops_busy or copy_busy) and tries < TRIES:
        _busy_tries[key] = tries
    return _measured[key]


def roofline(device: Device, seen: Iterable[tuple[float, float]] = ()) -> Roofline:
    """The device's peaks, measured on first use and then kept (``measure``); ``seen`` =
    (FLOPs, ms) of modules just measured: the peak FLOP/s rises to the fastest of them (see
    above)."""
    key = _key(device)
    if key not in _measured:
        measure(device)
    roof = _measured[key]
    fastest = max((flops / (ms / 1e3) for flops, ms in seen if flops > 0 and ms >= EVIDENCE_MS),
                  default=0.0)
    if fastest > roof.peak_flops:
        roof = _measured[key] = Roofline(fastest, roof.bandwidth)
    return roof


def known(device: Device) -> bool:
    """Whether this process has measured the device's peaks (at torch's thread count now) for
    good: on a quiet machine, or ``TRIES`` times."""
    key = _key(device)
    return key in _measured and key not in _busy_tries


def _matmul(device: Device) -> tuple[object, float]:
    a = torch.randn(MATMUL_N, MATMUL_N, device=device.torch_device)
    b = torch.randn(MATMUL_N, MATMUL_N, device=device.torch_device)
    return (lambda: torch.mm(a, b)), 2.0 * MATMUL_N**3


def _copy(device: Device) -> tuple[object, float]:
    source = torch.empty(COPY_BYTES // 4, device=device.torch_device)
    target = torch.empty_like(source)
    source.fill_(1.0)
    return (lambda: target.copy_(source)), 2.0 * COPY_BYTES  # read and write


def _best_rate(device: Device, make: object) -> tuple[float, bool]:
    """Units of work per second of the fastest of the runs that fit in ``BUDGET_S``, and
    whether the threads waited for a CPU meanwhile."""
    run, work = make(device)  # type: ignore[operator]
    run()  # warm: allocation, first-touch pages, kernel choice
    device.synchronize()
    best = float("inf")
    waited = waited_ns()
    started = time.perf_counter()
    while time.perf_counter() - started < BUDGET_S:
        begin = time.perf_counter()
        run()
        device.synchronize()
        best = min(best, time.perf_counter() - begin)
    block_ms = 1e3 * (time.perf_counter() - started)
    busy = wait_fraction(waited, waited_ns(), block_ms) > QUIET_WAIT
    return (work / best if best > 0 else 0.0), busy


def attainable(roof: Roofline, flops: float, bytes_moved: float) -> float:
    """The most FLOP/s work with this arithmetic intensity can reach on ``roof``."""
    if bytes_moved <= 0:
        return roof.peak_flops
    return min(roof.peak_flops, flops / bytes_moved * roof.bandwidth)

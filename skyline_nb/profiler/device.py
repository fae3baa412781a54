"""The device a measurement runs on: timers, synchronisation, memory statistics, capacity, OOM.

One small class per kind keeps the measuring code free of ``if cuda`` branches. CUDA times come from
events read after ONE synchronize (per-event syncs would serialise the GPU with the CPU and distort
the very thing measured); CPU times from ``perf_counter_ns``. Peak memory on CUDA is the caching
allocator's own counter of the bytes its callers requested (``_REQUESTED``); on CPU there is no
allocator counter, so the live-storage tracker in ``memory.py`` stands in, and it also enforces a
CPU ``memory_budget`` by raising ``CPUOutOfMemoryError`` (a ``MemoryError``), the CPU twin of
``torch.OutOfMemoryError``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.cgroup import memory_headroom
from skyline_nb.report import DeviceInfo


class CPUOutOfMemoryError(MemoryError):
    """A CPU measurement needed more than the capacity (available RAM or ``memory_budget``):
    ``needed`` bytes, or more where the iteration was ``stopped`` as it crossed the budget."""

    def __init__(self, message: str, needed: int | None = None, stopped: bool = False) -> None:
        super().__init__(message)
        self.needed, self.stopped = needed, stopped


# What a process needs over its tensors' peak: in a cgroup, a plain loop's usage rose 21–42 %
# above its tracked peak (BENCHMARKS.md, session 47)
HEAP = 1.5
# The share of that RAM the drag's range ends at: the kernel takes a little more before a
# click on "Measure at N" reads it again (a GRU's, in a 400 MiB container: the range's end,
# 1.5 × its peak, needed 166.5 MiB, and 165 were left at the click; BENCHMARKS.md, session 48)
RANGE_SHARE = 0.9
# Before a sample, the heap is trimmed where the RAM free is below this many times its step's
# tensors (``Device.make_room``)
ROOM = 4


def cuda_oom_type() -> type[BaseException]:
    return getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError


class Timer:
    """Times a region on the host clock (CPU device)."""

    def __init__(self) -> None:
        self._start = 0
        self._stop = 0

    def start(self) -> None:
        self._start = time.perf_counter_ns()

    def stop(self) -> None:
        self._stop = time.perf_counter_ns()

    def elapsed_ms(self) -> float:
        """Milliseconds between start and stop; call after the device was synchronised."""
        return (self._stop - self._start) / 1e6


class CudaTimer(Timer):
    """Times a region of the current CUDA stream with an event pair.

    The stream is looked up when the timer is made, not at each record (as ``Event.record()``
    with no stream does, in Python): a launch-bound step's pace is the host's, so what the host
    does around each step is in its time (the example MLP at 8 on an H100: pairs recorded so
    read 0.8 % below a loop that launches ahead in chunks of three, against +10.5 % with the
    lookup, lower in 7 of 8 rounds; on hosts whose pace moved ±40 % between rounds:
    BENCHMARKS.md, session 18)."""

    def __init__(self) -> None:
        super().__init__()
        self._stream = torch.cuda.current_stream()
        self._begin = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        self._begin.record(self._stream)

    def stop(self) -> None:
        self._end.record(self._stream)

    def elapsed_ms(self) -> float:
        return float(self._begin.elapsed_time(self._end))


@dataclass
class Device:
    """Base: what the measuring code needs from a device, CPU implementation."""

    torch_device: torch.device
    memory_budget: int | None = None
    # What this process could take when the profile began (``capacity_bytes``): the RAM
    # available on a CPU, the room on a GPU (``gpu_room_bytes``)
    _free: int = field(default=0, init=False, repr=False)

    kind = "cpu"
    # Iterations a timed chunk holds at least (``timing.time_steps``): one on a CPU, which
    # runs each op as it is called.
    min_chunk = 1

    @property
    def oom_types(self) -> tuple[type[BaseException], ...]:
        """Exceptions that mean "this batch does not fit" (sampling backs off on these)."""
        return (CPUOutOfMemoryError, cuda_oom_type(), MemoryError)

    def info(self) -> DeviceInfo:
        return DeviceInfo(kind=self.kind, name=self.name(), capacity_bytes=self.capacity_bytes())

    def name(self) -> str:
        import platform

        return platform.processor() or platform.machine() or "cpu"

    def __post_init__(self) -> None:
        self._free = available_ram_bytes()  # untrimmed: the level-1 steps after it would fault

    def capacity_bytes(self) -> int:
        """The user's ``memory_budget`` when given, else the RAM available when the profile
        began. The step's memory, freed between its iterations, stays in the process's heap
        and in its cgroup's usage, so a later reading counts it as taken: in a cgroup of 600
        MiB, 454 MiB were free before a profile and 372 after its samples, which made the
        largest batch that fits 11 beside a sample measured at 16 (BENCHMARKS.md, session 47)."""
        if self.memory_budget is not None:
            return int(self.memory_budget)
        return self._free

    def step_capacity_bytes(self) -> int:
        """Where the drag's range ends on a CPU without a budget: what a step's tensors may
        peak at, read after the samples, as "Measure at N" reads it (``measurement.outgrows``):
        the RAM the process may take then, its heap trimmed (never more than when the profile
        began; ``RANGE_SHARE`` of it), less what a process keeps beside its tensors (``HEAP``).
        The RAM when the profile began let the drag offer sizes that "Measure at N" refused:
        in a 400 MiB container a GRU's drag reached 282, where 253 MiB were free before the
        profile and 121 after it (BENCHMARKS.md, session 48)."""
        trim_heap()
        free = available_ram_bytes()
        return int(RANGE_SHARE * (self._free if free <= 0 else min(self._free, free)) / HEAP)

    def make_room(self, need_bytes: float) -> None:
        """Before a step of about ``need_bytes`` where the RAM is tight (less than ``ROOM`` ×
        that free): the heap's free pages go back (``trim_heap``), which a container counts as
        used. Not where the RAM is plenty: the next steps fault them in again, which raised
        the example CNN's profile from 27.7 to 31.7 of its iterations at 16, the LSTM's from
        30.9 to 33.4 (medians of 10 interleaved pairs; BENCHMARKS.md, session 48)."""
        if available_ram_bytes() < ROOM * need_bytes:
            trim_heap()

    def sampling_capacity_bytes(self) -> int:
        """What a sample's step may take, where the samples are chosen. Free RAM is no bound
        anything enforces: a process that outgrows its container's limit is killed, with the
        notebook's state, and a process needs more than its tensors (its heap keeps what
        earlier sizes freed, in pieces a larger step cannot reuse). In a cgroup, a plain
        loop's usage rose 21–42 % above the tracked peak, and a profile's while it timed its
        largest sample 1.5–2.2× (BENCHMARKS.md, session 47). So samples stay within half the
        RAM the profile began with, and within a budget (which an iteration of more tensors
        fails like an out-of-memory); the predictions still reach the whole capacity."""
        half = self._free // 2
        if self.memory_budget is None:
            return half
        return int(self.memory_budget) if half <= 0 else min(int(self.memory_budget), half)

    def timer(self) -> Timer:
        return Timer()

    def synchronize(self) -> None:
        """Wait for queued work; a no-op on CPU (ops are synchronous there)."""

    def hold_queue(self, ms: float) -> None:
        """Keep the device busy for about ``ms`` so the work that follows queues up (CUDA)."""

    def memory_allocated(self) -> int | None:
        """Allocator bytes in use, when the device has an allocator counter (CUDA)."""
        return None

    def make_library_workspaces(self) -> None:
        """Before a measurement's baseline: let the device's libraries make what they make once
        per process and keep (CUDA), so it counts in no measurement rather than in the first."""

    def reset_peak(self) -> None:
        """Start a new peak window (CUDA); the CPU uses a live-storage tracker instead."""

    def max_memory_allocated(self) -> int | None:
        return None

    def free_memory(self, thorough: bool = False) -> None:
        """Release what a finished (or, ``thorough``, an OOM-failed) measurement left behind.

        A full ``gc.collect`` costs ~0.25 s with torch imported, more than a small profile, so
        routine frees only collect the young generation; after an OOM the traceback's frames
        hold the failed iteration's tensors in cycles, and everything is collected.
        """
        gc.collect() if thorough else gc.collect(0)
        trim_heap()  # what the process no longer uses goes back: a container counts it


class CudaDevice(Device):
    kind = "cuda"
    # A chunk starts on an empty queue (the last one ended in a synchronize), so its first
    # iteration also waits for its own last kernels, which in a training loop run while the
    # host launches the next iteration; from its second on, an iteration's events are as far
    # apart as a loop's iterations. With three or more per chunk the median is never a first
    # one (an H100, the benchmark MLP at 8: 1.53 ms per iteration in a loop to one
    # synchronize; level 1's chunks of one or two read 1.64–2.07 ms; BENCHMARKS.md, session 16).
    min_chunk = 3

    @property
    def oom_types(self) -> tuple[type[BaseException], ...]:
        return (cuda_oom_type(), CPUOutOfMemoryError)

    def name(self) -> str:
        return torch.cuda.get_device_name(self.torch_device)

    def sampling_capacity_bytes(self) -> int:
        """The device's memory: its allocator raises an out-of-memory, and sampling backs off."""
        return self.capacity_bytes()

    def make_room(self, need_bytes: float) -> None:
        """Nothing: a step's tensors are the device's, not the host's heap."""

    def __post_init__(self) -> None:
        self._free = gpu_room_bytes(self.torch_device)

    def capacity_bytes(self) -> int:
        """The device memory this process could give the profile's steps when it began
        (``gpu_room_bytes``), or the budget when smaller."""
        if self.memory_budget is not None:
            return min(self._free, int(self.memory_budget))
        return self._free

    def timer(self) -> Timer:
        with torch.cuda.device(self.torch_device):
            return CudaTimer()

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.torch_device)

    def hold_queue(self, ms: float) -> None:
        """Put a spin kernel of about ``ms`` ahead of an instrumented iteration.

        An op's event pair brackets its place in the stream. When the GPU is idle, waiting for
        the host to launch the next kernel (small, launch-bound models), the pair also spans the
        instrumented launch path, so op times would sum to more than the plain iteration. With
        the queue held, every kernel is already waiting when the GPU reaches it and each pair
        measures GPU execution only; the launch gaps of the plain iteration then show up as
        untracked time, where they belong.
        """
        with torch.cuda.device(self.torch_device):
            tp.cuda_spin(ms * self._cycles_per_ms())

    def _cycles_per_ms(self) -> float:
        if getattr(self, "_spin_rate", None) is None:
            with torch.cuda.device(self.torch_device):
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                cycles = 10_000_000
                tp.cuda_spin(cycles // 10)  # warm the kernel up
                begin.record()
                tp.cuda_spin(cycles)
                end.record()
                end.synchronize()
                self._spin_rate = cycles / max(begin.elapsed_time(end), 1e-3)
        return self._spin_rate

    def memory_allocated(self) -> int | None:
        return self._bytes("current")

    def make_library_workspaces(self) -> None:
        """A tiny matmul forward and backward, so that cuBLAS has made its workspaces (one per
        handle: this thread's and autograd's device thread's, 32 MiB each on Hopper) before the
        baseline. Made at a process's first matmul and kept, they counted in the first profile
        of a process and in no later one: on an H200 the example MLP's first profile had a peak
        of 69.6 MiB and every later measurement 4.6 MiB (BENCHMARKS.md, "CUDA, H200"). Skyline
        measured after warm-up iterations, which left them out as this does. No RNG is used."""
        with torch.enable_grad():
            w = torch.ones(8, 8, device=self.torch_device, requires_grad=True)
            torch.nn.functional.linear(w, w, w[0]).sum().backward()
        self.synchronize()

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.torch_device)

    def max_memory_allocated(self) -> int | None:
        return self._bytes("peak")

    def _bytes(self, which: str) -> int:
        """The allocator's requested bytes (``_REQUESTED``), its allocated bytes where this
        torch keeps no such counter."""
        stats = torch.cuda.memory_stats(self.torch_device)
        allocated = stats.get(f"allocated_bytes.all.{which}", 0)
        return int(stats.get(f"{_REQUESTED}.{which}", allocated))

    def free_memory(self, thorough: bool = False) -> None:
        super().free_memory(thorough)
        torch.cuda.synchronize(self.torch_device)
        if thorough:
            torch.cuda.empty_cache()


# What the caching allocator's callers asked for, not the blocks it handed out: a block is
# rounded up to 512 bytes, and a cached block less than 1 MiB larger than a request is handed
# out whole, so the allocated bytes of one iteration depend on what the cache held before. On
# an H200 the example LSTM's peak in fresh trials at 12, 24 and 48 differed by +0.73, −1.15 and
# +1.26 % from the curve through the profile's samples in allocated bytes, and by 0.01 % in
# requested bytes (BENCHMARKS.md, "CUDA, H200"). The CPU allocator reports requested sizes too.
_REQUESTED = "requested_bytes.all"


def gpu_room_bytes(device: torch.device) -> int:
    """What the steps on ``device`` may take: the memory its driver has free (``mem_get_info``:
    other processes' memory and this process's CUDA context are out of it already), plus what
    this process's caching allocator holds without handing it out, less what it hands out
    (the user's own tensors, alive beside the steps: a profile's peaks count above them). The
    device's total, used until session 49, offered batch sizes that cannot fit on a GPU that
    another kernel shares, and counted its context (~0.5 GiB) as room."""
    free, _total = torch.cuda.mem_get_info(device)
    return max(0, int(free) + int(torch.cuda.memory_reserved(device))
               - int(torch.cuda.memory_allocated(device)))


def available_ram_bytes() -> int:
    """The RAM this process may still take: MemAvailable from /proc/meminfo (Linux), else
    physical pages, capped by its container's memory limit (``cgroup.memory_headroom``: the
    node's free RAM is no bound in a pod); 0 if unknown."""
    headroom = memory_headroom()
    free = _free_ram_bytes()
    return free if headroom is None else min(free, headroom) if free else headroom


def _free_ram_bytes() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def trim_heap() -> None:
    """Give the pages the C heap holds free back to the system (glibc's ``malloc_trim``; a
    no-op with another C library). A step's freed tensors stay in the heap, where a container
    counts them as used and a larger step's tensors (mapped apart, above glibc's threshold)
    cannot reuse them: in a 600 MiB container the example convolution net's profile rose to
    510–594 MiB timing 11 again after 4 (441 trimmed), and was killed in 1 of 7 runs;
    "Measure at 12" after it, allowed as the heap's 151 MiB free were counted as room, rose by
    its 242 MiB of tensors and was killed in 1 of 6; none of 16 runs since (BENCHMARKS.md, session
    48). It takes ~3 ms after a CNN's profile (61 MiB given back)."""
    with contextlib.suppress(AttributeError, OSError):
        ctypes.CDLL(None).malloc_trim(0)


def resolve_device(device: Any = None, memory_budget: int | None = None) -> Device:
    """``None`` -> CUDA when available else CPU; accepts "cpu", "cuda", "cuda:1", torch.device."""
    if isinstance(device, Device):
        return device
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        torch_device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device {device!r} is not a torch device (try 'cpu' or 'cuda')") from exc
    if memory_budget is not None and memory_budget <= 0:
        raise ValueError(f"memory_budget must be a positive number of bytes, not {memory_budget}")
    if torch_device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for, but torch.cuda.is_available() is False")
        if torch_device.index is None:
            torch_device = torch.device("cuda", torch.cuda.current_device())
        return CudaDevice(torch_device, memory_budget)
    if torch_device.type != "cpu":
        raise ValueError(f"device type {torch_device.type!r} is not supported (cpu or cuda)")
    return Device(torch_device, memory_budget)

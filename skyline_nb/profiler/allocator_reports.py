"""The CPU allocator's own reports of its allocations and frees, read through torch's kineto
profiler (private API, as ``torch_private.py``): what ``step_peak.py`` measures a step's peak
and its phases by, since kernels allocate below any dispatch mode (``AllocatorReports``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from skyline_nb.profiler.torch_private import need, profiler_running


class AllocatorReports:
    """What the CPU allocator reports over a block: (time ns, ±bytes) per allocation and free.

    Kernel-internal scratch (oneDNN convolution workspaces, ...) is allocated below the
    dispatcher, so a dispatch-mode tracker cannot see it; the allocator reports it to the
    kineto profiler (``profile_memory``). Ops are not recorded (only user scopes are observed,
    and there are none), so stopping the profiler and reading its events cost about a third of
    what ``torch.profiler.profile`` costs for the same memory events. Raises RuntimeError on
    entry when a profiler already runs (torch allows one).
    """

    def __init__(self, paired: bool = False) -> None:
        self.events: list[tuple[int, int]] = []
        self.paired = paired

    def __enter__(self) -> AllocatorReports:
        from torch._C import _autograd as autograd_c
        from torch._C import _profiler as profiler_c

        config = profiler_c.ProfilerConfig(
            profiler_c.ProfilerState.KINETO, False, True, False, False, False,
            profiler_c._ExperimentalConfig())
        activities = {profiler_c.ProfilerActivity.CPU}
        if profiler_running():
            raise RuntimeError("a profiler is already running")
        need(autograd_c, "_prepare_profiler", "torch._C._autograd")(config, activities)
        need(autograd_c, "_enable_profiler", "torch._C._autograd")(
            config, activities, {profiler_c.RecordScope.USER_SCOPE})
        return self

    def __exit__(self, *exc: object) -> None:
        from torch._C import _autograd as autograd_c

        results = need(autograd_c, "_disable_profiler", "torch._C._autograd")()
        if self.paired:
            self.events = _paired(results)
            return
        cpu = need(autograd_c, "DeviceType", "torch._C._autograd").CPU
        # only the allocator's reports carry bytes (a user scope's event carries 0), and the
        # enum is compared as is: reading a transformer step's ~1,700 reports took 1.7 ms by
        # event name, 0.5 ms by bytes first (10.5 ms with the enum's str()), and a profile
        # reads five to ten such windows
        self.events = sorted(
            (event.start_ns(), nbytes)
            for event in results.events()
            if (nbytes := event.nbytes()) and event.device_type() == cpu
        )

    def peak(self, after_bytes: int = 0, labels: Mapping[int, str] | None = None) -> int:
        """Max running sum of the reports, in time order (the largest of ``peaks``)."""
        return max(self.peaks(after_bytes, labels).values())

    def peaks(self, after_bytes: int = 0, labels: Mapping[int, str] | None = None,
              first: str = "") -> dict[str, int]:
        """Max running sum of the reports, in time order, for each part of the block.

        Frees of blocks allocated before the block started are not reported by torch, so the
        sum starts at zero at the start. ``after_bytes``: only the part after the last
        allocation of exactly that many bytes counts (a marker between iterations), the sum
        then starting at zero there. ``labels`` ({marker bytes: part}): an allocation of one
        of those sizes starts the part it names (the part before the first is ``first``); the
        markers' own bytes count nowhere.
        """
        events = self.events
        if after_bytes:
            marks = [i for i, (_t, nbytes) in enumerate(events) if nbytes == after_bytes]
            if not marks:
                raise RuntimeError("the allocator reported no marker allocation")
            events = [e for e in events[marks[-1] + 1:] if e[1] != -after_bytes]
        labels = labels or {}
        part, live = first, 0
        found = {first: 0}
        for _start, nbytes in events:
            if abs(nbytes) in labels:
                if nbytes > 0:
                    part = labels[nbytes]
                    found[part] = max(found.get(part, live), live)
                continue
            live += nbytes
            found[part] = max(found[part], live)
        return found


def _paired(results: object) -> list[tuple[int, int]]:
    """The reports, a free counted only where the block saw its allocation (by address).

    Torch keeps the size of every block allocated while it reported, also after the block is
    freed unreported, and a later block at the same address freed under the reports read as
    that size: in a profile after one that failed, level 1 read −464,048 B alive and its peak
    22,064 B low. A third slower to read than ``events()`` (the tree holds the addresses), so
    only for a block that frees what was made before it (level 1's: building the trial).
    """
    import torch
    from torch._C import _profiler as profiler_c

    allocation = need(profiler_c, "_ExtraFields_Allocation", "torch._C._profiler")
    cpu = torch.device("cpu")
    reports, stack = [], list(results.experimental_event_tree())  # type: ignore[attr-defined]
    # each pybind attribute read makes an object (``device.type`` a string, ~0.8 µs): read
    # once each, and an allocation has no children (a BERT's level-1 window, 4,400 reports:
    # 14-16 ms, now ~60 % of that)
    while stack:
        event = stack.pop()
        fields = event.extra_fields
        if type(fields) is allocation:
            size = fields.alloc_size
            if size and fields.device == cpu:
                reports.append((event.start_time_ns, size, fields.ptr))
        else:
            stack.extend(event.children)
    reports.sort()
    mine: set[int] = set()
    events = []
    for start, nbytes, ptr in reports:
        if nbytes > 0:
            mine.add(ptr)
        elif ptr in mine:
            mine.discard(ptr)
        else:
            continue
        events.append((start, nbytes))
    return events


@contextlib.contextmanager
def sizes_kept() -> Iterator[bool]:
    """The CPU allocator keeping each block's size over the block, as it does while it reports,
    without any report recorded; yields whether it does (c10's flag
    ``caffe2_report_cpu_memory_usage``, set through its symbol in libc10, and put back).

    ``step_peak.measured_step``'s iteration before the measured one needs only that: the
    measured one's frees of its blocks are then reported. Run under the reports instead, its
    own reports were read back and dropped, at 3–4.5 µs each (~2,000 an iteration for a
    ConvNeXt stepped by AdamW). Not where c10 logs at INFO level: the flag logs every
    allocation then. File descriptor 2 is silenced meanwhile: the flag makes c10 log its
    "Memory block of unknown size" line at a free of a block allocated before."""
    flags = _c10_flags()
    if flags is None or flags[1].value <= 0:
        yield False
        return
    flag = flags[0]
    was = flag.value
    with quiet_native_stderr():
        flag.value = True
        try:
            yield True
        finally:
            flag.value = was


@functools.cache
def _c10_flags() -> tuple[ctypes.c_bool, ctypes.c_int] | None:
    """c10's ``caffe2_report_cpu_memory_usage`` and ``caffe2_log_level`` (None: not found)."""
    import torch

    for library in sorted((Path(torch.__file__).parent / "lib").glob("*c10.*")):
        try:
            lib = ctypes.CDLL(str(library))
            return (ctypes.c_bool.in_dll(lib, "FLAGS_caffe2_report_cpu_memory_usage"),
                    ctypes.c_int.in_dll(lib, "FLAGS_caffe2_log_level"))
        except (OSError, ValueError):
            continue
    return None


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Silence file descriptor 2 for a moment (torch 2.13's kineto logs ``USDT: … profiler_start``
    from C++ at every profiler start/stop, and "Memory block of unknown size …" at frees inside a
    window; ipykernel would show those lines in the notebook).

    Python's own writes to ``sys.stderr`` still show where it is that descriptor (a script, the
    CLI, a terminal): it writes to the saved one meanwhile. A model's constructor warning and a
    provider's ``print(..., file=sys.stderr)`` inside level 1's window were lost; in a notebook
    ``sys.stderr`` is ipykernel's stream, not the descriptor. What native code writes to it is
    dropped (``step_peak.allocator_events``).
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    shown = sys.stderr
    try:
        if _writes_to_descriptor_2(shown):
            sys.stderr = io.TextIOWrapper(io.FileIO(saved, "w", closefd=False),
                                          encoding=shown.encoding, errors=shown.errors,
                                          write_through=True)
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        if sys.stderr is not shown:
            sys.stderr.flush()
            sys.stderr = shown
        os.dup2(saved, 2)
        os.close(saved)


def _writes_to_descriptor_2(stream: object) -> bool:
    try:
        return stream.fileno() == 2  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return False

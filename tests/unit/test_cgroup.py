"""The limits a container puts on this process, read from cgroup files (``profiler/cgroup.py``):
a CPU quota (``cpus.py`` says when torch runs more threads) and a memory limit (a CPU's
capacity, ``device.available_ram_bytes``, so that no sample outgrows the pod).

The files are written under a temporary folder laid out as ``/sys/fs/cgroup`` is, with a
``/proc/self/cgroup`` beside it, as cgroup v2 and v1 hosts and containers show them.
"""

from __future__ import annotations

import ctypes
import math
import os
from pathlib import Path

import pytest

from skyline_nb import measurement
from skyline_nb.examples import mlp
from skyline_nb.models.performance import EXTRAPOLATION_LIMIT, FLAT_EXTRAPOLATION_LIMIT
from skyline_nb.profiler import device
from skyline_nb.profiler.cgroup import cpu_quota, memory_headroom
from skyline_nb.profiler.session import profile

providers = (mlp.skyline_model_provider, mlp.skyline_input_provider,
             mlp.skyline_iteration_provider)


def layout(tmp_path: Path, own: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "own").write_text(own)
    return root, tmp_path / "own"


@pytest.mark.parametrize(("own", "files", "quota"), [
    # a container, cgroup v2: its own cgroup at the mount's root
    ("0::/\n", {"cpu.max": "200000 100000\n"}, 2.0),
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),
    # a host, cgroup v2: a limit on the process's slice, or on a parent of it
    ("0::/user.slice/session-1.scope\n",
     {"user.slice/session-1.scope/cpu.max": "max 100000", "user.slice/cpu.max": "300000 100000"},
     3.0),
    # cgroup v1, Docker's layout: the host's path, which the container's mount does not have
    ("12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
     {"cpu,cpuacct/cpu.cfs_quota_us": "100000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
     1.0),
    ("12:cpu,cpuacct:/\n",
     {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
     None),
    # the smallest of the two hierarchies that bind
    ("0::/\n3:cpu:/\n", {"cpu.max": "400000 100000", "cpu/cpu.cfs_quota_us": "250000",
                         "cpu/cpu.cfs_period_us": "100000"}, 2.5),
    # nothing readable, or nonsense: no quota
    ("0::/\n", {}, None),
    ("0::/\n", {"cpu.max": "lots\n"}, None),
])
def test_a_quota_is_read_where_cgroups_put_it(tmp_path, own, files, quota) -> None:
    assert cpu_quota(*layout(tmp_path, own, files)) == quota


def test_no_proc_file_still_reads_the_mounts_root(tmp_path) -> None:
    root, _ = layout(tmp_path, "", {"cpu.max": "100000 100000"})
    assert cpu_quota(root, tmp_path / "missing") == 1.0


GIB = 1 << 30


@pytest.mark.parametrize(("own", "files", "room"), [
    # a pod, cgroup v2: 4 GiB, 1 GiB used of which 256 MiB is page cache the kernel drops first
    ("0::/\n", {"memory.max": f"{4 * GIB}\n", "memory.current": f"{GIB}\n",
                "memory.stat": f"anon 1\ninactive_file {GIB // 4}\nactive_file 5\n"},
     3 * GIB + GIB // 4),
    ("0::/\n", {"memory.max": "max\n", "memory.current": f"{GIB}\n"}, None),
    # a host's slice whose parent holds the limit
    ("0::/a/b\n", {"a/b/memory.max": "max", "a/b/memory.current": "10",
                   "a/memory.max": f"{2 * GIB}", "a/memory.current": f"{GIB}"}, GIB),
    # cgroup v1, Docker's layout; its "no limit" is the largest page-aligned int64
    ("5:memory:/docker/abc\n", {"memory/memory.limit_in_bytes": f"{GIB}\n",
                                "memory/memory.usage_in_bytes": f"{GIB // 2}\n",
                                "memory/memory.stat": "cache 9\ntotal_inactive_file 100\n"},
     GIB // 2 + 100),
    ("5:memory:/\n", {"memory/memory.limit_in_bytes": "9223372036854771712\n",
                      "memory/memory.usage_in_bytes": "100\n"}, None),
    # over its limit (a moment's page cache): nothing left, never less
    ("0::/\n", {"memory.max": "100", "memory.current": "300"}, 0),
    ("0::/\n", {}, None),
    ("0::/\n", {"memory.max": "lots", "memory.current": "1"}, None),
])
def test_a_memory_limit_is_read_where_cgroups_put_it(tmp_path, own, files, room) -> None:
    assert memory_headroom(*layout(tmp_path, own, files)) == room


def test_a_cpus_capacity_is_the_free_ram_capped_by_the_pods_limit(monkeypatch) -> None:
    """The node's MemAvailable is no bound in a pod: a sample at 4× that fits it but not the
    pod's limit gets the kernel killed, with the notebook's state."""
    monkeypatch.setattr(device, "_free_ram_bytes", lambda: 60 * GIB)
    monkeypatch.setattr(device, "memory_headroom", lambda *args: 3 * GIB)
    assert device.available_ram_bytes() == 3 * GIB
    assert device.resolve_device("cpu").capacity_bytes() == 3 * GIB
    monkeypatch.setattr(device, "memory_headroom", lambda *args: None)
    assert device.available_ram_bytes() == 60 * GIB
    monkeypatch.setattr(device, "memory_headroom", lambda *args: 80 * GIB)
    assert device.available_ram_bytes() == 60 * GIB


def test_samples_stay_within_half_the_ram_the_profile_began_with(monkeypatch) -> None:
    """Without a budget nothing stops a step that outgrows the RAM (in a container: the
    kernel is killed); a process needs more than its tensors, so samples stay within half the
    RAM free when the profile began (``Device.sampling_capacity_bytes``), while the largest
    batch that fits is still predicted from all of it."""
    free = profile(*providers, batch_size=32, device="cpu")
    largest = max(free.samples, key=lambda s: s.batch_size)
    ram = 2 * largest.peak_bytes - 2  # its half no longer holds the largest sample
    monkeypatch.setattr(device, "available_ram_bytes", lambda: ram)
    report = profile(*providers, batch_size=32, device="cpu")
    assert report.device.capacity_bytes == ram
    assert report.models is not None and report.models.capacity_bytes == int(
        device.RANGE_SHARE * ram / device.HEAP)
    assert max(s.batch_size for s in report.samples) < largest.batch_size
    assert all(s.peak_bytes <= ram // 2 for s in report.samples)
    assert report.models is not None and report.models.max_batch_size() > largest.batch_size
    budgeted = device.resolve_device("cpu", memory_budget=ram // 4)
    assert (budgeted.capacity_bytes(), budgeted.sampling_capacity_bytes()) == (ram // 4, ram // 4)
    # a budget above the RAM bounds the predictions, not the samples: no kill for a budget
    above = device.resolve_device("cpu", memory_budget=4 * ram)
    assert (above.capacity_bytes(), above.sampling_capacity_bytes()) == (4 * ram, ram // 2)


@pytest.mark.parametrize("left", [0.9, 0.3])
def test_the_drag_offers_no_size_that_measure_at_n_would_refuse(monkeypatch, left) -> None:
    """The range ends where the step's tensors and the heap a process keeps beside them reach
    the RAM free after the samples (a profile leaves its process larger: in a 400 MiB
    container 253 MiB were free before it, 121 after), less a margin: "Measure at N" then runs
    at its top and refuses where that RAM is outgrown. The RAM when the profile began let a
    GRU's drag offer 282, which "Measure at N" refused. Where that leaves less than the
    samples took, the range still reaches them: they ran."""
    free = profile(*providers, batch_size=32, device="cpu")
    assert free.models is not None
    ram = 2 * int(free.models.predict_peak_bytes(128))  # samples to 4× the batch at most
    readings = iter([ram])  # the first, when the profile begins; then what is left
    for module in (device, measurement):
        monkeypatch.setattr(module, "available_ram_bytes", lambda: next(readings, int(left * ram)))
    monkeypatch.setattr(measurement, "memory_headroom", lambda: None)
    report = profile(*providers, batch_size=32, device="cpu")
    assert report.device.capacity_bytes == ram
    largest = max(s.batch_size for s in report.samples)  # the samples' sizes follow the timing
    assert report.models is not None and report.models.memory is not None
    top = report.models.max_batch_size()
    assert largest <= top < EXTRAPOLATION_LIMIT * largest  # the RAM ends the range
    if left == 0.9:
        assert largest < top and measurement.outgrows(report, top) is None
    # "Measure at N" refuses where the RAM left is outgrown; the range ends a little before
    over = max(top, math.floor(report.models.memory.inverse(left * ram / device.HEAP))) + 1
    assert "would likely need more than" in (measurement.outgrows(report, over) or "")


def test_the_heaps_free_pages_go_back_to_the_system() -> None:
    """Blocks under glibc's mmap threshold come from the heap; freeing every other one leaves
    holes the heap keeps, and the process's resident memory with them, until it is trimmed
    (``device.trim_heap``): what a container counts as used falls by them."""
    if not hasattr(ctypes.CDLL(None), "malloc_trim"):
        pytest.skip("no glibc malloc_trim here")

    def resident() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    blocks = [bytearray(64 << 10) for _ in range(640)]  # 40 MiB in 64 KiB blocks, touched
    del blocks[::2]
    before = resident()
    device.trim_heap()
    assert before - resident() >= 16 << 20
    del blocks


def test_the_heap_is_trimmed_before_a_step_only_where_the_ram_is_tight(monkeypatch) -> None:
    """A trim makes the next steps fault their pages in again (a CNN's profile cost 4 more of
    its iterations), so a sample trims only where its step's tensors are more than a quarter
    of the RAM free; a GPU's step is not the host heap's."""
    trims = []
    monkeypatch.setattr(device, "trim_heap", lambda: trims.append(1))
    monkeypatch.setattr(device, "available_ram_bytes", lambda: 400 << 20)
    cpu = device.Device(device.torch.device("cpu"))
    cpu.make_room(99 << 20)
    assert trims == []
    cpu.make_room(101 << 20)
    assert trims == [1]
    device.CudaDevice.make_room(cpu, 1 << 30)  # nothing, whatever the RAM
    assert trims == [1]


def test_a_ram_that_cannot_be_read_ends_no_range(monkeypatch) -> None:
    """Where the RAM free is unknown (0: another system), the samples' reach alone ends the
    drag's range, not the largest sample."""
    monkeypatch.setattr(device, "available_ram_bytes", lambda: 0)
    report = profile(*providers, batch_size=32, device="cpu")
    assert report.models is not None and report.models.memory is not None
    largest = max(s.batch_size for s in report.samples)
    reach = FLAT_EXTRAPOLATION_LIMIT if report.models.time.shape == "flat" else EXTRAPOLATION_LIMIT
    assert report.models.max_batch_size() == reach * largest

"""The CPUs this process may use (affinity, a container's CFS quota) and the report's first note
when torch runs more threads than that (``profiler/cpus.py``)."""

from __future__ import annotations

import os

import torch
from test_cgroup import layout  # the cgroup folders, laid out (fixture module)

from skyline_nb.examples import mlp
from skyline_nb.profiler import cgroup
from skyline_nb.profiler.cpus import UsableCpus, oversubscribed_note, usable_cpus
from skyline_nb.profiler.session import profile


def test_the_usable_count_is_the_affinity_capped_by_the_quota_rounded_down(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    root, own = layout(tmp_path, "0::/\n", {"cpu.max": "250000 100000"})
    assert usable_cpus(root, own) == UsableCpus(2, "its container's CPU quota of 2.5 CPUs", True)
    root, own = layout(tmp_path / "b", "0::/\n", {"cpu.max": "50000 100000"})
    assert usable_cpus(root, own).count == 1  # half a CPU is still one thread's worth
    root, own = layout(tmp_path / "c", "0::/\n", {})
    assert usable_cpus(root, own) == UsableCpus(16, "its CPU affinity: 16 of this machine's 64")
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert usable_cpus(root, own) == UsableCpus(16, "all this machine has")


def test_the_note_names_the_count_to_set_and_only_when_threads_exceed_it() -> None:
    cpus_two = UsableCpus(2, "its container's CPU quota of 2 CPUs", quota=True)
    assert oversubscribed_note(2, cpus_two) is None
    assert oversubscribed_note(1, cpus_two) is None
    note = oversubscribed_note(32, cpus_two) or ""
    assert note.startswith("torch runs 32 threads, and this process may use 2 CPUs "
                           "(its container's CPU quota of 2 CPUs)")
    assert note.endswith("torch.set_num_threads(2) before your training loop, and profile again")
    assert "the times here, of the steps between those waits, are below a loop's mean" in note
    alone = oversubscribed_note(4, UsableCpus(1, "its CPU affinity: 1 of this machine's 2")) or ""
    assert "use 1 CPU (" in alone and "quota" not in alone  # no quota: no stalls to speak of


def profiled_at(threads: int, progress=None):
    """A profile of the example MLP at ``threads`` torch threads; the count is set back after."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                         mlp.skyline_iteration_provider, batch_size=8, device="cpu",
                         predict=False, progress=progress)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    return report


def test_a_profile_with_more_threads_than_cpus_says_so_first_and_keeps_the_count(
        monkeypatch) -> None:
    monkeypatch.setattr(cgroup, "cpu_quota", lambda *args: 1.0)  # a container of one CPU
    shown = []
    report = profiled_at(2, shown.append)
    assert shown and all(p.notice == report.warnings[0] for p in shown)  # from the first stage
    assert report.warnings[0].startswith("torch runs 2 threads, and this process may use 1 CPU")
    assert "torch.set_num_threads(1)" in report.warnings[0]


def test_a_profile_within_its_cpus_has_no_such_note(monkeypatch) -> None:
    monkeypatch.setattr(cgroup, "cpu_quota", lambda *args: None)
    report = profiled_at(1)
    assert not [w for w in report.warnings if w.startswith("torch runs")]

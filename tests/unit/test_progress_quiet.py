"""Progress that stays out of timed iterations (``Progress.timed``, ``quiet_cores``).

A notebook's browser and server draw each progress message on the kernel's cores for ~25 ms,
and for ~100–250 ms after the widget first appears (BENCHMARKS.md, session 20). So a message
the front end draws is always followed by untimed work (building, memory measurements) before
anything is timed, long enough to cover the drawing (``progress.covers``, session 28); stages
that time at once, or whose untimed work is shorter, are marked ``timed`` and not drawn; and in
a kernel nothing is timed until the front end has drawn the widget's first stage.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
import torch
from torch import nn

from skyline_nb import quiet_cores
from skyline_nb.examples import mlp
from skyline_nb.live import LiveProfile, SourceCell
from skyline_nb.profiler import iteration, level2, session, timing
from skyline_nb.profiler.progress import DRAW_MS, Progress, Reporter, covers
from skyline_nb.report import Report
from skyline_nb.request import ProfileRequest
from skyline_nb.textprogress import TextProgress


def test_every_drawn_stage_is_followed_by_untimed_work_before_anything_is_timed(monkeypatch):
    events: list[tuple[str, Any]] = []

    def logged(kind: str, original: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            events.append((kind, None))
            return original(*args, **kwargs)
        return call

    monkeypatch.setattr(timing, "timed_chunk", logged("timed", timing.timed_chunk))
    monkeypatch.setattr(iteration, "measured_step", logged("untimed", iteration.measured_step))
    monkeypatch.setattr(iteration, "_tracked_warmup",
                        logged("untimed", iteration._tracked_warmup))
    monkeypatch.setattr(session, "memory_run", logged("untimed", session.memory_run))

    class LoggedRun(level2.OperationTracker):
        def __enter__(self) -> Any:
            events.append(("timed", None))
            return super().__enter__()

    monkeypatch.setattr(level2, "OperationTracker", LoggedRun)
    session.profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                    mlp.skyline_iteration_provider, batch_size=16, device="cpu",
                    progress=lambda p: events.append(("message", p)))

    messages = [p for kind, p in events if kind == "message"]
    assert any(p.timed for p in messages) and any(not p.timed for p in messages)
    assert all(p.timed for p in messages if p.stage.startswith("timing each op"))
    for i, (kind, progress) in enumerate(events):
        if kind != "message" or progress.timed:
            continue
        work = [k for k, _ in events[i + 1:] if k != "message"]
        assert not work or work[0] == "untimed", (progress.stage, work[:3])


def test_a_stage_is_drawn_only_where_its_untimed_work_covers_the_drawing():
    assert covers(2 * DRAW_MS) and not covers(2 * DRAW_MS - 0.1)


def test_the_stages_of_a_sub_millisecond_step_that_lead_into_timed_work_are_not_drawn():
    """The issue's own MLP (256-512-10, ~0.7 ms steps): a sample's peak takes a few ms, then
    the sample's steps are timed, inside the ~25 ms the front end spends drawing a message;
    drawn, its drag was off in 9 of 36 JupyterLab profiles, 0 of 36 without those messages
    (BENCHMARKS.md, session 28). On a CPU the memory run is in the first stage, after the
    build and warm-up and before the headline's timing: no stage of its own to draw."""
    seen: list[Progress] = []
    session.profile(lambda: nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)),
                    lambda batch_size=16: (torch.randn(batch_size, 256),
                                           torch.randint(0, 10, (batch_size,))),
                    lambda model: (lambda x, y: nn.functional.cross_entropy(model(x), y)
                                   .backward()),
                    device="cpu", progress=seen.append)
    assert not [p for p in seen if p.stage.startswith("measuring memory at the peak")]
    assert all(p.timed for p in seen if p.stage.startswith("timing each op"))
    samples = [p for p in seen if p.stage.startswith("measuring batch size")]
    assert len(samples) >= 2 and all(p.timed for p in samples[:2]), samples  # 2× and ½× or 4×
    assert not seen[0].timed
    assert seen[0].stage == ("building the model, measuring its memory, then timing the "
                             "iteration and each op")


def test_the_profile_s_budget_leaves_out_the_time_the_display_took():
    reporter = Reporter(lambda p: time.sleep(0.2), predict=True)
    reporter.stage("building", 7)
    reporter.stage("timing each op (run 1)", 2, timed=True)
    assert reporter.profile_s() < 0.1 < 0.4 <= time.perf_counter() - reporter.started


def scripted_jiffies(monkeypatch: pytest.MonkeyPatch, busy_shares: list[float]) -> list[float]:
    """``cpu_jiffies`` reading the given busy share in each window after the first reading
    (100 ticks a window), and ``time.sleep`` moving a fake clock; returns the sleeps."""
    readings = [(0, 0)]
    for share in busy_shares:
        busy, total = readings[-1]
        readings.append((busy + round(100 * share), total + 100))
    clock, slept = [0.0], []
    monkeypatch.setattr(quiet_cores, "cpu_jiffies", lambda: readings.pop(0))
    monkeypatch.setattr(quiet_cores.time, "perf_counter", lambda: clock[0])

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(quiet_cores.time, "sleep", sleep)
    return slept


def test_the_wait_ends_after_two_quiet_windows(monkeypatch):
    slept = scripted_jiffies(monkeypatch, [0.9, 0.6, 0.05, 0.3, 0.02, 0.0, 0.9])
    waited = quiet_cores.wait_for_quiet_cores(max_wait_s=10)
    assert len(slept) == 6 and waited == pytest.approx(6 * quiet_cores.WINDOW_S)


def test_a_machine_that_stays_busy_is_waited_for_at_most_the_bound(monkeypatch):
    slept = scripted_jiffies(monkeypatch, [0.5] * 50)
    assert quiet_cores.wait_for_quiet_cores() == pytest.approx(quiet_cores.MAX_WAIT_S)
    assert len(slept) == round(quiet_cores.MAX_WAIT_S / quiet_cores.WINDOW_S)


def test_without_the_counter_the_wait_is_the_measured_tail(monkeypatch):
    slept = scripted_jiffies(monkeypatch, [])
    monkeypatch.setattr(quiet_cores, "cpu_jiffies", lambda: None)
    assert quiet_cores.wait_for_quiet_cores() == pytest.approx(quiet_cores.FALLBACK_S)
    assert slept == [quiet_cores.FALLBACK_S]


def test_the_real_counter_reads_and_the_wait_is_bounded():
    jiffies = quiet_cores.cpu_jiffies()
    assert jiffies is None or 0 <= jiffies[0] <= jiffies[1]
    waited = quiet_cores.wait_for_quiet_cores()
    assert quiet_cores.WINDOW_S <= waited < quiet_cores.MAX_WAIT_S + 2 * quiet_cores.WINDOW_S


def test_text_progress_writes_no_timed_stage(capsys):
    line = TextProgress(sys.stdout)
    line(Progress("measuring memory at the peak", 0.5, 1.0, 1.0))
    line(Progress("timing each op (run 1)", 0.6, 1.2, 0.8, timed=True))
    assert capsys.readouterr().out == (
        "skyline-nb:  50% measuring memory at the peak · 1 s elapsed · about 1 s left\n")


class Staged:
    """Stands in for ``profile``: the stages given, each recording whether the kernel waited
    for the front end before it; returns a report of ``report``."""

    def __init__(self, stages: list[Progress], report: Report, waits: list[int]) -> None:
        self.stages, self.report, self.waits, self.before = stages, report, waits, []

    def __call__(self, *_providers: Any, progress: Any, **_options: Any) -> Report:
        for stage in self.stages:
            self.before.append(len(self.waits))
            progress(stage)
        return self.report


def test_in_a_kernel_the_widget_sends_no_timed_stage_and_waits_once_after_the_first(monkeypatch):
    from sample_reports import sample_report

    sent, waits = [], []
    monkeypatch.setattr(quiet_cores, "in_kernel", lambda: True)
    monkeypatch.setattr(quiet_cores, "wait_for_quiet_cores",
                        lambda: waits.append(len(sent)) or 0.0)
    stages = [Progress("building the model and timing an iteration", 0.0, 0.1, None),
              Progress("timing each op (run 1)", 0.6, 2.0, 1.0, timed=True),
              Progress("measuring batch size 64", 0.7, 2.5, 1.0)]
    staged = Staged(stages, sample_report(), waits)
    live = LiveProfile(ProfileRequest(find=lambda: (print, print, print)),
                       SourceCell("cell-a", "def skyline_input_provider(batch_size=32):\n"
                                  "    return (batch_size,)\n"), staged)
    monkeypatch.setattr(live.widget, "_send", lambda msg, buffers=None: sent.append(msg))
    live.run()
    drawn = [m["state"]["progress"].get("stage") for m in sent
             if m.get("state", {}).get("progress")]
    assert drawn == ["building the model and timing an iteration", "measuring batch size 64"]
    # one wait, after the first stage went out (the widget's first drawing), none before it
    assert len(waits) == 1 and waits[0] > 0 and staged.before == [0, 1, 1]

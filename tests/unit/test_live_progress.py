"""A live profile's progress and cancellation (``skyline_nb.live``), with stand-in profilers.

While the kernel profiles, each stage the profiler announces is sent to the front end at once
(the ``progress`` trait); an interrupt (the widget's Cancel interrupts the kernel) ends the run
with "cancelled" in ``progress``, no error, and the widget's kernel side still serving. In an
IPython without a kernel the progress is a text line on stdout instead.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import IPython
import pytest
from sample_reports import sample_report

import skyline_nb.profiler.prepare
from skyline_nb.live import LiveProfile, SourceCell
from skyline_nb.profiler.progress import Progress
from skyline_nb.report import Report
from skyline_nb.request import ProfileRequest

PROVIDER = "def skyline_input_provider(batch_size=32):\n    return (batch_size,)\n"
STAGES = [
    Progress("building the model and timing an iteration", 0.0, 0.1, None),
    Progress("timing batch size 64, 128", 0.4, 2.0, 3.0),
    Progress("timing each op (run 1)", 0.8, 4.0, 1.0,
             notice="One torch thread ran this step 15.9× faster"),
]


class StagedProfile:
    """Stands in for ``profile``: announces STAGES, then raises ``stop`` or returns a report.
    ``seen`` holds the messages the widget had sent to the front end at each stage."""

    def __init__(self, live_sent: list[dict[str, Any]], stop: BaseException | None = None):
        self.sent, self.stop, self.seen = live_sent, stop, []

    def __call__(self, *_providers: Any, progress: Any, **_options: Any) -> Report:
        for stage in STAGES:
            progress(stage)
            self.seen.append([m["state"]["progress"] for m in self.sent
                              if "progress" in m.get("state", {})])
        if self.stop is not None:
            raise self.stop
        return sample_report()


@pytest.fixture
def sent() -> list[dict[str, Any]]:
    return []


def make_live(sent: list[dict[str, Any]], profile_fn: Any,
              monkeypatch: pytest.MonkeyPatch) -> LiveProfile:
    live = LiveProfile(ProfileRequest(find=lambda: (print, print, print)),
                       SourceCell("cell-a", PROVIDER), profile_fn)
    monkeypatch.setattr(live.widget, "_send", lambda msg, buffers=None: sent.append(msg))
    return live


@pytest.fixture
def no_shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    yield


def test_each_stage_reaches_the_front_end_while_the_profile_runs(sent, monkeypatch, no_shell):
    staged = StagedProfile(sent)
    live = make_live(sent, staged, monkeypatch)
    live.run()
    assert [seen[-1]["stage"] for seen in staged.seen] == [s.stage for s in STAGES]
    assert staged.seen[1][-1] == {"stage": "timing batch size 64, 128", "done": 0.4,
                                  "elapsed_s": 2.0, "remaining_s": 3.0, "notice": None}
    assert staged.seen[0][-1]["remaining_s"] is None
    assert staged.seen[2][-1]["notice"] == STAGES[2].notice
    assert (live.widget.status, live.widget.progress, live.widget.error) == ("", {}, "")
    assert live.widget.report["batch_size"] == 32


def test_an_interrupt_says_cancelled_with_the_stage_and_raises(sent, monkeypatch, no_shell):
    live = make_live(sent, StagedProfile(sent, KeyboardInterrupt()), monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        live.run()
    progress = live.widget.progress
    assert progress["cancelled"] is True and progress["stage"] == "timing each op (run 1)"
    assert progress["elapsed_s"] >= 0
    assert (live.widget.status, live.widget.error, live.widget.report) == ("", "", {})


def test_a_failure_is_an_error_not_a_cancellation(sent, monkeypatch, no_shell):
    live = make_live(sent, StagedProfile(sent, RuntimeError("boom")), monkeypatch)
    with pytest.raises(RuntimeError):
        live.run()
    assert live.widget.error.startswith("RuntimeError: boom")
    assert (live.widget.status, live.widget.progress) == ("", {})


def test_cancelling_a_reprofile_or_a_measurement_keeps_the_kernel_side_serving(
        sent, monkeypatch, no_shell):
    live = make_live(sent, StagedProfile(sent, KeyboardInterrupt()), monkeypatch)
    live.widget._handle_custom_msg({"kind": "reprofile"}, [])  # the interrupt ends here
    assert live.widget.progress["cancelled"] is True

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(skyline_nb.profiler.prepare, "measure_iteration", interrupted)
    live.widget._handle_custom_msg({"kind": "measure", "batch_size": 48}, [])
    assert live.widget.progress["stage"] == "measuring at batch size 48"
    assert (live.widget.status, live.widget.error) == ("", "")
    live.widget._handle_custom_msg(
        {"kind": "anywidget-command", "id": "after", "name": "ping", "msg": None}, [])
    assert [m["content"]["response"] for m in sent if m.get("method") == "custom"] == [{"ok": True}]


class Shell:
    """An IPython shell as far as ``live`` looks: a kernel, or none (a terminal)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel


@pytest.mark.parametrize(("kernel", "lines"), [(None, 4), (object(), 0)])
def test_a_text_line_only_in_an_ipython_without_a_kernel(sent, monkeypatch, capsys, kernel,
                                                          lines):
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell(kernel))
    make_live(sent, StagedProfile(sent), monkeypatch).run()
    out = capsys.readouterr().out.splitlines()
    assert len(out) == lines
    if lines:
        assert out[1] == " 40% timing batch size 64, 128 · 2 s elapsed · about 3 s left"
        assert out[2] == STAGES[2].notice  # once, before the stage that first carries it


class Loop:
    """A kernel's main-thread event loop, as far as ``mainthread`` uses it."""

    def __init__(self) -> None:
        self.callbacks: list[tuple[Any, tuple[Any, ...]]] = []

    def add_callback(self, callback: Any, *args: Any) -> None:
        self.callbacks.append((callback, args))

    def run(self) -> None:
        for callback, args in self.callbacks:
            callback(*args)


def test_work_a_subshell_message_starts_runs_on_the_main_thread_and_can_be_cancelled(
        sent, monkeypatch):
    """Widget messages may arrive on a subshell thread (JupyterLab 4.6, ipykernel 7); the
    re-profile they start must run where the user's code runs and an interrupt lands."""
    loop = Loop()
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell(SimpleNamespace(io_loop=loop)))
    seen: list[tuple[str, Any]] = []

    def interrupted_profile(*_args: Any, progress: Any, **_kwargs: Any) -> Any:
        seen.append((threading.current_thread().name, signal.getsignal(signal.SIGINT)))
        progress(STAGES[1])
        signal.raise_signal(signal.SIGINT)  # the kernel interrupt that Cancel asks for
        raise AssertionError("SIGINT did not interrupt the profile")

    live = make_live(sent, interrupted_profile, monkeypatch)
    subshell = threading.Thread(
        target=live.widget._handle_custom_msg, args=({"kind": "reprofile"}, []))
    subshell.start()
    subshell.join()
    assert seen == [] and len(loop.callbacks) == 1  # nothing ran on the subshell thread
    ignoring = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the kernel between cells
    try:
        loop.run()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, ignoring)
    assert seen == [("MainThread", signal.default_int_handler)]
    assert live.widget.progress["cancelled"] is True
    assert live.widget.progress["stage"] == "timing batch size 64, 128"
    assert (live.widget.status, live.widget.error) == ("", "")

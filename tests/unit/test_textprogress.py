"""The text progress line (``skyline_nb.textprogress``) of the command line and plain IPython:
rewritten in place on a terminal, one line per stage elsewhere, durations read as the widget's."""

from __future__ import annotations

import io

import pytest

from skyline_nb.profiler.progress import Progress
from skyline_nb.textprogress import TextProgress, format_duration, format_progress

STAGES = [
    Progress("building the model and timing an iteration", 0.0, 0.4, None),
    Progress("peak memory at batch size 64", 0.25, 4.0, 12.2),
    Progress("timing each op (run 1)", 0.9, 15.6, 0.4),
]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (0.4, "0 s"), (2.5, "3 s"), (7.5, "8 s"), (59.4, "59 s"), (59.6, "1 min 00 s"),
     (125, "2 min 05 s"), (3600, "60 min 00 s"), (-3, "0 s")],
)
def test_durations_read_as_in_the_widget(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text  # js/test/progress.test.js checks the same cases


def test_the_line_names_the_stage_the_share_done_and_the_times() -> None:
    assert format_progress(STAGES[1], bar=True) == (
        "[#####---------------]  25% peak memory at batch size 64 · 4 s elapsed · "
        "about 12 s left")
    first = format_progress(STAGES[0], bar=False)
    assert first.endswith("· 0 s elapsed · estimating the time left")
    assert format_progress(STAGES[2], bar=False).endswith("· almost done")
    assert format_progress(Progress("done", 1.0, 9.6, 0.0), bar=False) == (
        "100% done · 10 s elapsed")


def test_off_a_terminal_each_stage_is_a_line_of_its_own() -> None:
    stream = io.StringIO()
    with TextProgress(stream) as line:
        for stage in STAGES:
            line(stage)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert lines[1] == ("skyline-nb:  25% peak memory at batch size 64 · 4 s elapsed · "
                        "about 12 s left")


def test_on_a_terminal_one_line_is_rewritten_in_place_cut_to_the_width_and_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    stream = Terminal()
    with TextProgress(stream, prefix="") as line:
        for stage in STAGES:
            line(stage)
        assert not stream.getvalue().endswith("\n")
    text = stream.getvalue()
    assert text.endswith("\x1b[K\n") and text.count("\n") == 1
    writes = text.rstrip("\n").split("\r")[1:]
    assert len(writes) == 3
    assert all(len(w.removesuffix("\x1b[K")) <= 39 for w in writes)
    assert writes[2].startswith("[##################--]  90% timing")


def test_close_without_a_line_writes_nothing() -> None:
    stream = Terminal()
    TextProgress(stream).close()
    assert stream.getvalue() == ""


def test_a_notice_is_written_once_on_a_line_of_its_own_between_the_progress_lines() -> None:
    notice = "One torch thread ran this step 15.9× faster on this busy machine"
    stages = [STAGES[0], *(Progress(s.stage, s.done, s.elapsed_s, s.remaining_s, notice=notice)
                           for s in STAGES[1:])]
    stream = Terminal()
    with TextProgress(stream, prefix="") as line:
        for stage in stages:
            line(stage)
    text = stream.getvalue()
    assert text.count(notice) == 1
    before, after = text.split(notice + "\n")
    assert before.endswith("\x1b[K\n")  # the first stage's line was ended, not overwritten
    assert after.startswith("\r[#####")  # the progress line goes on below it

"""A profile's progress as one line of text, for a terminal: the command line, plain IPython.

``TextProgress(stream)`` is a ``progress=`` callback for ``skyline_nb.profile``. On a terminal it
keeps one line, rewritten in place as each stage starts (carriage return, cut to the terminal's
width so it never wraps) and ended by ``close()``; elsewhere (a pipe, a log file) each stage is
a line of its own, so nothing is overwritten. A notice (``Progress.notice``) is written once, on
a line of its own. Durations read as in the widget (``progress.js``).
"""

from __future__ import annotations

import math
import shutil
from types import TracebackType
from typing import TextIO

from skyline_nb.profiler.progress import Progress

BAR_WIDTH = 20


def format_duration(seconds: float) -> str:
    """Seconds as the widget shows them: ``7 s``, ``2 min 05 s`` (halves round up, as in JS)."""
    s = max(0, math.floor(seconds + 0.5))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def format_progress(progress: Progress, bar: bool) -> str:
    """``[####----] 42% timing each op (run 2) · 12 s elapsed · about 20 s left``."""
    share = min(max(progress.done, 0.0), 1.0)
    filled = round(share * BAR_WIDTH)
    meter = f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] " if bar else ""
    left = progress.remaining_s
    if share >= 1:
        when = ""
    elif left is None:
        when = " · estimating the time left"
    else:
        when = " · almost done" if left < 1 else f" · about {format_duration(left)} left"
    return (f"{meter}{share:4.0%} {progress.stage} · "
            f"{format_duration(progress.elapsed_s)} elapsed{when}")


class TextProgress:
    """A ``progress=`` callback writing ``prefix`` + the progress line to ``stream``."""

    def __init__(self, stream: TextIO, prefix: str = "skyline-nb: ") -> None:
        self.stream = stream
        self.prefix = prefix
        isatty = getattr(stream, "isatty", None)
        self.in_place = bool(isatty and isatty())
        self._open = False  # a line written in place and not ended yet
        self._notice: str | None = None  # the last notice written

    def __call__(self, progress: Progress) -> None:
        if progress.timed:  # a terminal on the same cores redraws too (``Progress.timed``)
            return
        if progress.notice and progress.notice != self._notice:  # once, on a line of its own
            self.close()
            self.stream.write(self.prefix + progress.notice + "\n")
            self._notice = progress.notice
        line = self.prefix + format_progress(progress, bar=self.in_place)
        if self.in_place:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r" + line[:width] + "\x1b[K")
            self._open = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the line written in place, so what follows starts on a line of its own."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def __enter__(self) -> TextProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

"""What the user's code prints while it is profiled is held back, not shown fifty times.

A profile runs the user's iteration 30–60 times (warm-up, timing, the other batch sizes, the
instrumented runs); an iteration that logs its loss every few steps filled the notebook's output
with lines that say nothing about the profile (a policy-gradient step printing every 5th step:
9 lines before the widget). Python-level writes to ``sys.stdout`` are collected over the
profile; the report says how many lines there were and shows the last. If the profile fails,
they are written out after all, before the error: they may be what explains it. Writes to
stderr (warnings, errors) and from native code go through unchanged.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import Any

SHOWN_CHARS = 200


class HeldPrints:
    """The text the user's code printed while held."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()

    def lines(self) -> list[str]:
        return [line for line in self.buffer.getvalue().splitlines() if line.strip()]

    def warning(self) -> str | None:
        """A sentence for the report, or None when nothing was printed."""
        lines = self.lines()
        if not lines:
            return None
        last = lines[-1] if len(lines[-1]) <= SHOWN_CHARS else lines[-1][:SHOWN_CHARS] + "…"
        many = "a line" if len(lines) == 1 else f"{len(lines)} lines"
        return (f"the iteration printed {many} while it was profiled (it runs dozens of times); "
                f"not shown, the last: {last}")


class _Holding(io.TextIOBase):
    """``sys.stdout`` over the profile: writes are held while it runs and go to the stream it
    replaced after. What the user's code set up meanwhile keeps this object (``logging.basicConfig
    (stream=sys.stdout)`` in a provider, a progress bar): with the buffer itself in its place,
    everything such a logger wrote afterwards was lost."""

    def __init__(self, held: io.StringIO, shown: Any) -> None:
        super().__init__()
        self.held, self.shown, self.holding = held, shown, True

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.holding or self.shown is None:
            return self.held.write(text)
        return self.shown.write(text)

    def flush(self) -> None:
        if not self.holding and self.shown is not None:
            self.shown.flush()


@contextlib.contextmanager
def held_prints() -> Iterator[HeldPrints]:
    """Collect ``sys.stdout`` writes in the block; on an error, write them out, then raise."""
    held = HeldPrints()
    shown = sys.stdout
    holding = _Holding(held.buffer, shown)
    try:
        with contextlib.redirect_stdout(holding):
            yield held
    except BaseException:
        text = held.buffer.getvalue()
        if text and shown is not None:
            shown.write(text)
        raise
    finally:
        holding.holding = False

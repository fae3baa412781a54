"""Ctrl+C held off while the profiler puts the user's state back.

Python raises a KeyboardInterrupt between any two instructions, the first one of a context
manager's ``__exit__`` included, and there it skips the restore that ``__exit__`` was to run: an
interrupt at the ``__exit__`` of the block that takes torch's dispatch modes off for a phase
marker left them off, and the op tracker exiting next raised "trying to pop from empty mode
stack" instead of the interrupt (``tests/unit/test_interrupts.py``, session 51). Where state
must come back whole, SIGINT is recorded meanwhile and raised once it is back.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interrupts_held() -> Iterator[list[int]]:
    """SIGINT is recorded, not raised, meanwhile (main thread only: elsewhere Python delivers
    no signals); the list it yields is non-empty afterwards when one came."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)

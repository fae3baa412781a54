"""Where the work a widget asks for runs: on the kernel's main thread, as a cell would.

JupyterLab 4.6 and Notebook 7 send widget messages over a kernel subshell where the kernel has
them (ipykernel 7): their handlers run in a thread of their own, beside the user's cells, and
an interrupt (SIGINT, handled only by the main thread) never reaches them. A profile started
there would run alongside the user's code and could not be cancelled. So ``on_main_thread``
hands such work to the main thread's event loop: it runs once the cell running now is done,
later cells wait for it, and an interrupt raises KeyboardInterrupt in it, as in a cell (the
kernel ignores SIGINT between cells; the work turns that off while it runs).

Called on the main thread (a kernel without subshells, a test, plain IPython) or where no
kernel loop is found, the work runs at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable


def on_main_thread(work: Callable[[], None]) -> None:
    """Run ``work()`` on the kernel's main thread, now or as soon as it is free."""
    if threading.current_thread() is threading.main_thread():
        work()
        return
    from IPython import get_ipython

    loop = getattr(getattr(get_ipython(), "kernel", None), "io_loop", None)
    if loop is None:
        work()
        return
    loop.add_callback(interruptible, work)


def interruptible(work: Callable[[], None]) -> None:
    """``work()`` on the main thread with SIGINT raising KeyboardInterrupt, as in a cell."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        work()
    finally:
        signal.signal(signal.SIGINT, previous)

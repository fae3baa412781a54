"""Fixtures shared by the unit tests."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread(request: pytest.FixtureRequest):
    """One intra-op thread: on a shared 2-core runner, OpenMP barriers thrash (10× slower).

    A module that checks what users run at torch's own thread count says so with
    ``USER_THREADS = True`` and keeps torch's default."""
    if getattr(request.module, "USER_THREADS", False):
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def busy_core() -> Iterator[subprocess.Popen[bytes]]:
    """One process spinning on a core; it stops by itself after 2 minutes, or at teardown."""
    spinner = subprocess.Popen(
        [sys.executable, "-c",
         "import time\nend = time.time() + 120\nwhile time.time() < end: pass"])
    time.sleep(0.3)
    try:
        yield spinner
    finally:
        spinner.kill()
        spinner.wait()

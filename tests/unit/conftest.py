"""Fixtures shared by the unit tests."""

from __future__ import annotations

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

"""The CPU-wait counter (``cpuwait.py``) and what a profile says when samples waited.

The stopping rules that use it are in ``test_timing.py`` (scripted); here the counter is
checked against a real competing process pinned to the same core.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

from skyline_nb.profiler import iteration, timing  # noqa: E402
from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns  # noqa: E402


def test_wait_fraction_is_zero_when_the_counter_is_unknown() -> None:
    assert wait_fraction(None, 5_000_000, 10.0) == 0.0
    assert wait_fraction(1_000_000, 6_000_000, 10.0) == pytest.approx(0.5)


@pytest.mark.skipif(
    waited_ns() is None or not hasattr(os, "sched_setaffinity"),
    reason="needs Linux schedstats and CPU affinity",
)
def test_the_counter_sees_a_process_competing_for_the_same_core() -> None:
    """Pinned to one core with a spinning child: about half of 300 ms is spent waiting."""
    core = min(os.sched_getaffinity(0))
    spinner = (
        f"import os, time; os.sched_setaffinity(0, {{{core}}}); end = time.time() + 5\n"
        "while time.time() < end: pass"
    )
    saved = os.sched_getaffinity(0)
    child = subprocess.Popen([sys.executable, "-c", spinner])
    try:
        os.sched_setaffinity(0, {core})
        time.sleep(0.3)  # the child starts and pins itself
        before, start = waited_ns(), time.perf_counter()
        while time.perf_counter() - start < 0.3:
            pass
        elapsed_ms = (time.perf_counter() - start) * 1000
        fraction = wait_fraction(before, waited_ns(), elapsed_ms)
    finally:
        os.sched_setaffinity(0, saved)
        child.kill()
        child.wait()
    assert fraction > 0.2, fraction


@pytest.mark.slow
def test_samples_that_never_found_a_quiet_stretch_are_reported(monkeypatch) -> None:
    """Every sample iteration waits, timed again too (the headline's do not): the report names
    those sizes."""
    from skyline_nb.examples import mlp
    from skyline_nb.profiler.session import profile

    real = timing.timed_chunk
    sampling = [False]

    def busy_while_sampling(step, device, n):
        times, fraction, faults = real(step, device, n)
        return times, (0.5 if sampling[0] else fraction), faults

    def busy(real):  # a sample's timing, first or again (a far-off sample is timed again)
        def timed(self, *args, **kwargs):
            sampling[0] = True
            try:
                return real(self, *args, **kwargs)
            finally:
                sampling[0] = False

        return timed

    monkeypatch.setattr(timing, "timed_chunk", busy_while_sampling)
    monkeypatch.setattr(iteration.WarmTrial, "time_at", busy(iteration.WarmTrial.time_at))
    monkeypatch.setattr(iteration.WarmTrial, "time_again",
                        busy(iteration.WarmTrial.time_again))
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=8, device="cpu")
    busy = [w for w in report.warnings if "timed on a busy machine" in w]
    sizes = ", ".join(str(s.batch_size) for s in report.samples if s.batch_size != 8)
    assert len(busy) == 1 and f"batch size {sizes} timed" in busy[0], report.warnings

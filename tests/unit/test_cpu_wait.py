"""Blocks whose threads waited for a CPU are set aside by level 1 (``cpuwait.py``).

The logic runs on scripted blocks (exact); the counter itself is checked against a real
competing process pinned to the same core.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

from scripted_blocks import script_blocks  # noqa: E402

from skyline_nb.profiler import iteration  # noqa: E402
from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns  # noqa: E402
from skyline_nb.profiler.device import resolve_device  # noqa: E402
from skyline_nb.profiler.providers import Trial  # noqa: E402


def _build() -> Trial:
    return Trial(torch.nn.Linear(2, 2), lambda: None, (), {}, [], "test")


def test_two_blocks_stretched_alike_by_a_burst_do_not_settle_the_headline(monkeypatch) -> None:
    """80 and 82 ms agree within 5 %, but their threads waited half the time: set aside."""
    script_blocks(monkeypatch, [(40.0, 0.0), (80.0, 0.5), (82.0, 0.5), (40.0, 0.0), (41.0, 0.001)])
    result = iteration.measure_level1(_build, resolve_device("cpu"), 8)
    assert result.converged and result.iteration_ms == pytest.approx(40.5)
    assert result.waited_blocks == 2 and result.block_means == [80.0, 82.0, 40.0, 41.0]


def test_a_long_sample_iteration_that_waited_does_not_settle_alone(monkeypatch) -> None:
    """A sample's timed second warm-up of ≥ 50 ms settles it only if it did not wait."""
    sizes = script_blocks(monkeypatch, [(90.0, 0.4), (60.0, 0.0), (61.0, 0.0)])
    sample = iteration.measure_level1(_build, resolve_device("cpu"), 8,
                                      precision=iteration.SAMPLE)
    assert sample.converged and sample.iteration_ms == pytest.approx(60.5)
    assert sizes == [1, 1, 1] and sample.waited_blocks == 1


def test_a_machine_busy_throughout_ends_within_two_budgets(monkeypatch) -> None:
    """Every block waited (more threads than free cores): none settles, the time spent is
    bounded, and the result is the median of the blocks that waited least."""
    sizes = script_blocks(
        monkeypatch, [(50.0, 0.3), (70.0, 0.31), (52.0, 0.3), (51.0, 0.3), (90.0, 0.6)]
    )
    result = iteration.measure_level1(_build, resolve_device("cpu"), 8)
    assert not result.converged and result.iteration_ms == 52.0  # of 70, 52, 51 (not 90)
    timed_ms = sum(n * ms for n, ms in zip(sizes[1:], result.block_means, strict=True))
    assert timed_ms <= 2 * iteration.MAX_TIMING_MS + 2 * 90.0


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
    """Every sample block waits (the headline's do not): the report names those batch sizes."""
    from skyline_nb.examples import mlp
    from skyline_nb.profiler.sampling import sampling_in_progress
    from skyline_nb.profiler.session import profile

    real = iteration.time_block

    def busy_while_sampling(trial: Trial, device: object, n: int) -> iteration.Timed:
        block = real(trial, device, n)
        return block._replace(waited=0.5) if sampling_in_progress() else block

    monkeypatch.setattr(iteration, "time_block", busy_while_sampling)
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=8, device="cpu")
    busy = [w for w in report.warnings if "kept the CPU busy" in w]
    assert len(busy) == 1 and "batch size 16, 32" in busy[0], report.warnings
    assert not any("did not settle" in w for w in report.warnings)

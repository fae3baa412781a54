"""Level 1's timing: the median of single iterations, quiet ones first (``timing.py``).

The stopping rules run on scripted chunks (exact); ``test_profiler_load.py`` runs the real
thing against a competing process.
"""

from __future__ import annotations

import statistics
import time

import pytest
from scripted_chunks import script_chunks

from skyline_nb.profiler.device import resolve_device
from skyline_nb.profiler.timing import HEADLINE, SAMPLE, time_steps


def _steps() -> tuple[list[int], object]:
    count = [0]

    def step() -> int:
        count[0] += 1
        return count[0]

    return count, step


def test_a_quiet_long_iteration_takes_the_minimum_count() -> None:
    """40 ms iterations: one per chunk, 5 of them (200 ms ≥ 30 ms), median 40."""
    count, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        sizes = script_chunks(mp, [(40.0, 0.0)])
        result = time_steps(step, resolve_device("cpu"), HEADLINE)
    assert sizes == [1] * 5 and count[0] == 5
    assert result.settled(HEADLINE) and result.result(HEADLINE) == 40.0


def test_short_iterations_run_in_chunks_until_the_minimum_time() -> None:
    """0.2 ms iterations: chunks of 2 ms (10 iterations) until 30 ms are timed."""
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        sizes = script_chunks(mp, [(0.2, 0.0)])
        result = time_steps(step, resolve_device("cpu"), HEADLINE)
    assert sizes[0] == 1 and set(sizes[1:]) == {10}
    assert sum(result.ms) >= HEADLINE.min_ms and result.result(HEADLINE) == 0.2


def test_iterations_that_waited_for_a_cpu_are_set_aside() -> None:
    """A burst stretches two chunks to 80 ms (their threads waited half the time): the median
    is over the quiet iterations only, and it takes 5 of them."""
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        script_chunks(mp, [(40.0, 0.0), (80.0, 0.5), (82.0, 0.5), (40.0, 0.0), (41.0, 0.001)])
        result = time_steps(step, resolve_device("cpu"), HEADLINE)
    assert result.waited_count == 2 and len(result.quiet()) == 5
    assert result.result(HEADLINE) == 41.0  # median of 40, 40, 41, 41, 41


def test_a_machine_busy_throughout_ends_within_the_patience() -> None:
    """Every chunk waited: timing stops once the patience is spent, with the median of all."""
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        script_chunks(mp, [(50.0, 0.3), (70.0, 0.31), (52.0, 0.3), (51.0, 0.3), (90.0, 0.6)])
        result = time_steps(step, resolve_device("cpu"), HEADLINE)
    assert not result.settled(HEADLINE)
    longest = max(result.ms)  # patience: 300 ms or 8 iterations, whichever is longer
    patience = max(HEADLINE.patience_ms, HEADLINE.patience_iterations * longest)
    assert sum(result.ms) <= patience + longest
    assert len(result.ms) <= HEADLINE.patience_iterations + 3
    assert result.result(HEADLINE) == pytest.approx(statistics.median(result.ms))


@pytest.mark.parametrize("chunks", [
    [(90.0, 0.4), (60.0, 0.0), (62.0, 0.0)],  # a waited one, then two quiet ones that agree
    [(60.0, 0.0), (70.0, 0.0), (61.0, 0.0)],  # two that disagree: a third is taken
])
def test_a_sample_settles_on_quiet_iterations_that_agree(chunks) -> None:
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        sizes = script_chunks(mp, chunks)
        result = time_steps(step, resolve_device("cpu"), SAMPLE)
    assert sizes == [1, 1, 1] and result.result(SAMPLE) == 61.0


def test_a_short_sample_runs_until_its_minimum_time() -> None:
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        script_chunks(mp, [(0.5, 0.0)])
        result = time_steps(step, resolve_device("cpu"), SAMPLE)
    assert sum(result.ms) >= SAMPLE.min_ms and result.result(SAMPLE) == 0.5


def test_real_iterations_are_timed_one_by_one() -> None:
    """Not scripted: a sleep of 2 ms per step is timed at about 2 ms each."""
    result = time_steps(lambda: time.sleep(0.002), resolve_device("cpu"), SAMPLE)
    assert all(ms >= 2.0 for ms in result.ms) and len(result.ms) >= SAMPLE.min_iterations

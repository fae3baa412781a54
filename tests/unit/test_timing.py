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
from skyline_nb.profiler.iteration import IterationResult, WarmTrial
from skyline_nb.profiler.timing import HEADLINE, SAMPLE, Timing, time_steps


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


def test_a_machine_busy_for_most_of_the_timing_gets_the_median_of_all() -> None:
    """Under one spinning process at 2 threads, a few chunks ran quiet (both threads on a core)
    and most waited: those few were the headline, 2.4–3.0 ms against a plain loop's 6.3–7.6.
    Most iterations waited: the median of all, as the plain loop's."""
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        script_chunks(mp, [(2.5, 0.0), (7.0, 0.4), (7.2, 0.5), (2.4, 0.0), (6.9, 0.4),
                           (2.6, 0.0), (7.1, 0.5)])
        result = time_steps(step, resolve_device("cpu"), HEADLINE)
    quiet = result.quiet()
    assert 0 < len(quiet) < result.waited_count
    assert result.result(HEADLINE) == pytest.approx(statistics.median(result.ms))
    assert result.result(HEADLINE) > 6.0


@pytest.mark.parametrize("headline_busy", [False, True])
def test_a_sample_counts_quiet_iterations_or_all_as_the_headline_did(headline_busy) -> None:
    """A sample is a ratio of the headline: both are quiet medians, or both medians of all.
    Its 2–3 iterations say little about the machine: a burst of the browser's over two of them
    is still a burst when the headline's timing was mostly quiet."""
    headline = Timing()
    headline.add([10.0] * 5, waited=headline_busy)
    headline.add([10.0] * 4, waited=not headline_busy)
    assert headline.busy is headline_busy
    warm = WarmTrial(trial=None, device=None, inputs_for=None,
                     user=IterationResult(16, 10.0, 1, headline))
    sample = Timing()
    sample.add([30.0], waited=False)
    sample.add([60.0, 66.0], waited=True)  # a burst over most of the sample
    ratio = warm._sample(32, sample, SAMPLE).ratio
    assert ratio == (6.0 if headline_busy else 3.0)


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

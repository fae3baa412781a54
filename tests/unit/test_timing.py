"""Level 1's timing: the median of single iterations, quiet ones first (``timing.py``).

The stopping rules run on scripted chunks (exact); ``test_profiler_load.py`` runs the real
thing against a competing process.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import pytest
import torch
from scripted_chunks import script_chunks

from skyline_nb.profiler import timing
from skyline_nb.profiler.device import CudaDevice, Device, Timer, resolve_device
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


def _spin_step(ms_at: object) -> tuple[list[float], object]:
    """A step that busy-waits ``ms_at(seconds since its first call)`` milliseconds, and the
    list of its calls' start times."""
    calls: list[float] = []

    def step() -> None:
        now = time.perf_counter()
        calls.append(now)
        until = now + ms_at(now - calls[0]) / 1e3  # type: ignore[operator]
        while time.perf_counter() < until:
            pass

    return calls, step


def test_a_short_step_slow_after_a_pause_is_timed_once_it_runs_at_its_pace() -> None:
    """A CPU runs a step slowly for tens of milliseconds after it paused, less and less (the
    example MLP at 32 on one host: +190, +62, +29, +22, +14 % in its first iterations and
    +7–10 % 50 ms later, BENCHMARKS.md, session 51). Here a real 1 ms step starts 2.5× slower
    and settles over ~100 ms: the warm-up goes on while its windows get faster, and the
    headline reads 1 ms, where its first 30 ms would have read ~2."""
    calls, step = _spin_step(lambda s: 1.0 + 1.5 * math.exp(-s / 0.025))
    result = time_steps(step, resolve_device("cpu"), HEADLINE)
    assert HEADLINE.warm_ms > 100.0
    assert result.result(HEADLINE) == pytest.approx(1.0, rel=0.1)
    assert calls[-len(result.ms)] - calls[0] > 0.06  # timed from past the slow stretch


def test_a_short_step_at_its_pace_from_the_start_warms_briefly() -> None:
    """A step that runs at its pace from its first iteration (session 54's host: the MLP at 32
    slow for 2–3 iterations after a pause, then steady) stops warming after a few windows (10
    ms before the headline), not after the whole ``warm_ms``: that bought nothing there and
    cost up to 17 of a 9 ms step's iterations."""
    calls, step = _spin_step(lambda s: 1.0)
    timing._warm_up(step, HEADLINE.warm_ms, 1.0)
    assert len(calls) < 0.6 * HEADLINE.warm_ms  # 1 ms each
    assert len(calls) >= (timing.SETTLED_WINDOWS + 1) * HEADLINE.warm_ms / timing.WARM_WINDOWS


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


@pytest.mark.parametrize("busy", [False, True])
def test_after_a_busy_headline_a_sample_stops_on_iterations_that_waited_too(busy) -> None:
    """Every chunk waited, as beside a spinner of the same session. The sample's result is then
    the median of all its iterations, as the headline's was, so quiet ones are not waited for:
    three iterations (two that disagree, then a third) instead of the patience's five."""
    _, step = _steps()
    with pytest.MonkeyPatch.context() as mp:
        sizes = script_chunks(mp, [(60.0, 0.4), (70.0, 0.5), (61.0, 0.4)])
        result = time_steps(step, resolve_device("cpu"), SAMPLE, busy=busy)
    # without: until the patience is spent, 5 iterations' worth (305 ms of 61 ms ones)
    assert sizes == [1] * (3 if busy else SAMPLE.patience_iterations)
    assert result.settled(SAMPLE, busy) is busy
    assert result.result(SAMPLE, busy=True) == 61.0


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


class QueueClock:
    """A host that launches an iteration in ``launch_ms`` and a GPU that finishes its last
    kernels ``tail_ms`` after the last launch: launch-bound, as the example MLP at 8 on an H100."""

    def __init__(self, launch_ms: float, tail_ms: float) -> None:
        self.launch_ms, self.tail_ms = launch_ms, tail_ms
        self.host = self.gpu_done = 0.0

    def step(self) -> None:
        self.host += self.launch_ms
        self.gpu_done = self.host + self.tail_ms

    def event(self) -> float:
        """When the GPU reaches an event recorded now: after all work queued before it."""
        return max(self.host, self.gpu_done)


class QueueTimer(Timer):
    def __init__(self, clock: QueueClock) -> None:
        super().__init__()
        self.clock = clock

    def start(self) -> None:
        self.began = self.clock.event()

    def stop(self) -> None:
        self.ended = self.clock.event()

    def elapsed_ms(self) -> float:
        return self.ended - self.began


@pytest.mark.parametrize("min_chunk", [CudaDevice.min_chunk, 1])
def test_a_gpu_chunk_outvotes_the_iteration_that_starts_on_an_empty_queue(min_chunk) -> None:
    """Events per iteration on a scripted stream: a chunk's first iteration also waits for its
    own last kernels (the chunk before ended in a synchronize); the others are as far apart as
    a training loop's iterations. CUDA's chunks of three or more read the loop's 1.53 ms;
    chunks as the CPU's (one, then ~2 ms: one here, as the first read 2.13) read every
    iteration with its tail."""
    clock = QueueClock(launch_ms=1.53, tail_ms=0.6)

    @dataclass
    class QueueDevice(Device):
        kind = "cuda"

        def timer(self) -> Timer:
            return QueueTimer(clock)

        def synchronize(self) -> None:
            clock.host = clock.event()

    QueueDevice.min_chunk = min_chunk
    ms = time_steps(clock.step, QueueDevice(torch.device("cpu")), HEADLINE).result(HEADLINE)
    if min_chunk == CudaDevice.min_chunk:
        assert ms == pytest.approx(1.53)
    else:
        assert ms == pytest.approx(1.53 + 0.6)


@pytest.mark.parametrize("iteration_ms", [0.25, 1.0, 3.7, 9.4, 40.0])  # 0.25: sums exact
@pytest.mark.parametrize(("precision", "kind"), [(HEADLINE, "cuda"), (SAMPLE, "cpu"),
                                                 (HEADLINE, "cpu")])
def test_the_expected_cost_of_a_timing_is_what_a_quiet_one_spends(
    iteration_ms: float, precision, kind: str
) -> None:
    """``Precision.quiet_ms`` (the samples' budget counts it) is the time ``time_steps``
    spends on a quiet machine, in the chunks it takes, with a third iteration where two would
    settle if they agreed (they often do not on a shared host). A GPU's sample at the
    headline's precision: 6–9 iterations of a few ms, not the 2–3 the budget once counted. A
    CPU's short step also runs its first iteration and the warm-up untimed."""
    count, step = _steps()
    warmed: list[float] = []

    class Chunked(Device):
        pass

    Chunked.kind = kind
    Chunked.min_chunk = CudaDevice.min_chunk if kind == "cuda" else 1
    with pytest.MonkeyPatch.context() as mp:
        script_chunks(mp, [(iteration_ms, 0.0)])
        mp.setattr(timing, "_warm_up", lambda step, ms, first: warmed.append(ms))
        kept = sum(time_steps(step, Chunked(torch.device("cpu")), precision).ms)
    spent = kept + (sum(warmed) + iteration_ms if warmed else 0.0)  # the first one untimed
    assert bool(warmed) == (kind == "cpu" and iteration_ms < timing.WARM_BELOW_MS)
    expected = precision.quiet_ms(iteration_ms, Chunked.min_chunk, warms=kind == "cpu")
    if count[0] - len(warmed) >= 3:  # timed iterations (the first is not, where warmed)
        assert expected == pytest.approx(spent)
    else:  # two that agree settled it; the budget counts a third
        assert expected == pytest.approx(spent + iteration_ms)
    assert precision.quiet_ms(0.0, Chunked.min_chunk) == 0.0


def test_the_spread_is_the_middle_half_of_the_iterations_the_median_counts() -> None:
    timing = Timing()
    timing.add([10.0, 11.0, 12.0], waited=False)
    timing.add([40.0], waited=True)  # set aside: enough quiet ones came
    assert timing.counted(HEADLINE) == [10.0, 11.0, 12.0]
    assert timing.result(HEADLINE) == 11.0
    assert timing.spread(HEADLINE) == 2.0 / 11.0
    timing.add([30.0, 50.0, 60.0], waited=True)  # most waited: the busy machine's median, of all
    assert timing.busy and timing.spread(HEADLINE) == (50.0 - 11.0) / 30.0
    # the middle half: one stall among many steps does not make them look scattered
    steady = Timing()
    steady.add([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 5.0], waited=False)
    assert steady.spread(HEADLINE) < 0.05

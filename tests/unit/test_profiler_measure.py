"""Level 1 and the CPU live-storage tracker; predictions through the sampling contract."""

from __future__ import annotations

import pytest
import torch

from skyline_nb.examples import mlp
from skyline_nb.profiler import measure_iteration
from skyline_nb.profiler.device import CPUOutOfMemoryError
from skyline_nb.profiler.memory import LiveStorageTracker
from skyline_nb.profiler.session import profile
from skyline_nb.profiler.timing import HEADLINE
from skyline_nb.report import NodeKind, Sample
from skyline_nb.report_checks import impossible_values


def test_live_storage_tracker_is_byte_exact():
    tracker = LiveStorageTracker(torch.device("cpu"))
    with tracker:
        a = torch.empty(1000, dtype=torch.float32)  # 4000 bytes
        b = torch.empty(250, dtype=torch.float64)  # 2000 bytes
        view = a[10:20]  # same storage: not counted again
        a.add_(1)  # in place: no new storage
        del b
        c = torch.empty(100, dtype=torch.int8)
        assert tracker.live == 4000 + 100
    assert tracker.peak == 6000
    del a, view, c
    assert tracker.live == 0
    tracker.close()


def test_live_storage_tracker_enforces_a_budget():
    tracker = LiveStorageTracker(torch.device("cpu"), budget=5000)
    with pytest.raises(CPUOutOfMemoryError), tracker:
        keep = [torch.empty(1000) for _ in range(3)]  # noqa: F841 - held on purpose
    tracker.close()


def test_measure_iteration_is_a_sample_with_its_timing():
    result = measure_iteration(
        mlp.skyline_model_provider, mlp.skyline_input_provider, mlp.skyline_iteration_provider,
        8, "cpu",
    )
    sample = result.sample()
    assert isinstance(sample, Sample) and sample.batch_size == 8
    assert sample.iteration_ms == result.timing.result(HEADLINE)  # the median of what it counts
    assert sample.iteration_ms > 0
    weights = sum(p.numel() * 4 for p in mlp.skyline_model_provider().parameters())
    # weights + grads + momentum, at least
    assert sample.peak_bytes >= 3 * weights


def test_profile_with_predictions():
    report = profile(
        mlp.skyline_model_provider, mlp.skyline_input_provider, mlp.skyline_iteration_provider,
        batch_size=8, device="cpu", memory_budget=1 << 30,
    )
    sizes = [s.batch_size for s in report.samples]
    assert 8 in sizes and len(set(sizes)) >= 3
    assert report.models is not None
    assert report.models.memory is not None and report.models.memory.slope > 0
    assert report.device.capacity_bytes == 1 << 30


def test_level2_run_count_grows_for_short_runs_and_stays_odd():
    """One quiet run when it is long; short runs get more repeats (a median of a few tiny runs
    is load-sensitive), up to a cap."""
    from skyline_nb.profiler.level2 import LEVEL2_MAX_RUNS, more_level2_runs

    def count(wall_ms: float, waited: bool = False) -> int:
        runs: list[tuple[float, bool]] = []
        while more_level2_runs(runs):
            runs.append((wall_ms, waited))
        return len(runs)

    assert count(90.0) == count(12.0) == 1  # CNN-sized runs: one
    assert count(8.0) == 3  # 2 runs (16 ms) reach the 10 ms budget; a third for an odd count
    assert count(0.5) == LEVEL2_MAX_RUNS == 9  # a tiny MLP: the cap
    assert all(count(w) % 2 == 1 for w in (0.5, 3.0, 4.0, 6.0, 10.0, 33.0, 200.0))


def test_level2_runs_that_waited_are_retried_within_a_patience():
    """Runs during which another process held the cores do not count; retries are bounded."""
    from skyline_nb.profiler.level2 import LEVEL2_PATIENCE_MS, more_level2_runs

    runs = [(20.0, True), (20.0, True)]
    assert more_level2_runs(runs)
    runs += [(20.0, False)]
    assert not more_level2_runs(runs)  # one quiet 20 ms run: enough
    starved: list[tuple[float, bool]] = []
    while more_level2_runs(starved):
        starved.append((50.0, True))
    assert sum(w for w, _ in starved) <= LEVEL2_PATIENCE_MS + 50.0
    # Two quiet runs (an even count asks for a third), then a machine busy from there on:
    # the patience ends it too (it ran 1,007 runs, 30 s, under load before).
    busy = [(0.5, False), (0.5, False)]
    while more_level2_runs(busy):
        busy.append((0.5, True))
    assert sum(w for w, waited in busy if waited) <= LEVEL2_PATIENCE_MS + 0.5


@pytest.mark.parametrize("headline_busy", [True, False])
def test_after_a_busy_headline_the_op_timing_does_not_wait_for_quiet_runs(
        monkeypatch, headline_busy):
    """Every instrumented run waited for a CPU. After a headline whose steps mostly waited too
    (the median of all of them), runs of that busy machine are what it describes: the usual
    count of runs, not the patience's worth of retries waiting for quiet ones that do not come
    (beside a spinner of the same session: the CNN's op timing 76 ms instead of 615, and the
    untracked time +12.6 % instead of +27.1 %; BENCHMARKS.md, session 25)."""
    from skyline_nb.profiler import level2, timing
    from skyline_nb.profiler.level2 import LEVEL2_MAX_RUNS

    monkeypatch.setattr(timing, "wait_fraction", lambda *a: 0.5 if headline_busy else 0.0)
    monkeypatch.setattr(level2, "wait_fraction", lambda *a: 0.5)
    seen = []
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=8, device="cpu",
                     predict=False, progress=seen.append)
    runs = [int(p.stage.rsplit(" ", 1)[1].rstrip(")")) for p in seen
            if p.stage.startswith("timing each op (run ")]
    first_pass = runs[:runs.index(1, 1)] if runs.count(1) > 1 else runs  # before reconciling
    assert (len(first_pass) <= LEVEL2_MAX_RUNS) is headline_busy, runs
    assert "the machine was busy while ops were timed" in " ".join(report.warnings)
    assert impossible_values(report) == []


def test_progress_names_each_stage_in_order_with_an_estimate(monkeypatch):
    # a sampling budget no host spends: on a slow one the MLP's samples spent it above the batch
    # (16, 32, 64) before the cheap size below came, as the plan allows (a clean-clone CI run
    # and a local one, session 55); the plan on a tight budget is test_sample_order's, on a
    # scripted clock
    from skyline_nb.profiler import samples

    monkeypatch.setattr(samples, "sampling_budget_ms", lambda *args, **kwargs: 60_000.0)
    # the process's first profile measures the machine's roofline first: not this test's
    profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
            mlp.skyline_iteration_provider, batch_size=8, device="cpu", predict=False)
    seen = []
    profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
            mlp.skyline_iteration_provider, batch_size=8, device="cpu", progress=seen.append)
    stages = [p.stage for p in seen]
    assert stages[0].startswith("building the model") and stages[-1] == "done"
    sizes = [int(s.rsplit(" ", 1)[1]) for s in stages if s.startswith("measuring batch size")]
    # 2× first; below the batch ½× or ¼× (cheap iterations), as the measured growth decides
    assert sizes[0] == 16 and any(n < 8 for n in sizes), stages
    # the samples last, on what the rest of the profile really cost (``sampling_budget_ms``)
    first_sample = next(i for i, s in enumerate(stages) if s.startswith("measuring batch size"))
    assert any(s.startswith("timing each op") for s in stages[:first_sample]), stages
    done = [p.done for p in seen]
    assert done == sorted(done) and done[0] >= 0.0 and done[-1] == 1.0
    assert seen[0].remaining_s is None
    assert all(p.remaining_s is not None and p.remaining_s >= 0 for p in seen[1:])
    elapsed = [p.elapsed_s for p in seen]
    assert elapsed == sorted(elapsed)


def test_reconciling_a_busy_machine_is_bounded_by_the_first_pass(monkeypatch):
    """Σ ops never agreeing with the headline (a machine busy in changing ways) no longer
    costs six more instrumented passes: at most RECONCILE_SHARE× the first one, then the op
    times are scaled to the headline and the profile goes on (a GRU took 25–31 s before)."""
    import time as clock

    from skyline_nb.profiler import level2

    real_op_times = level2.op_times
    calls = []

    def slow_op_times(*args, **kwargs):
        calls.append(clock.perf_counter())
        clock.sleep(0.2)  # an instrumented pass of a model with many small ops
        ops, starved = real_op_times(*args, **kwargs)
        ops.scale(100.0 * len(calls) / ops.ops_ms())  # busy in changing ways: 100, 200, 300 ms
        return ops, starved

    report, headline = _never_consistent(monkeypatch, slow_op_times)
    # first pass + passes started before the deadline (2 × the first pass later): 3, not 7
    assert 2 <= len(calls) <= 2 + level2.RECONCILE_SHARE < 1 + level2.RECONCILE_ATTEMPTS
    assert report.iteration_ms == headline
    # ops summing to many steps: their shares are said to be rough too
    assert any("op times are scaled to the step, their shares as measured, which at " in w
               and "may be far off too" in w for w in report.warnings), report.warnings


def test_two_quiet_passes_alike_end_reconciling(monkeypatch):
    """An excess the instrumentation itself makes (the same in every quiet pass: a packed GRU
    does more work under a dispatch mode) is not measured away: after the second pass agrees
    with the first, the op times are scaled to the headline and the profile goes on."""
    from skyline_nb.profiler import level2

    real_op_times = level2.op_times
    calls = []

    def systematic_op_times(*args, **kwargs):
        ops, _ = real_op_times(*args, **kwargs)
        calls.append(1)
        ops.scale(100.0 / ops.ops_ms())  # every quiet pass 100 ms: the same excess
        return ops, False

    report, headline = _never_consistent(monkeypatch, systematic_op_times)
    assert impossible_values(report) == [], report.warnings
    assert len(calls) == 2
    assert report.iteration_ms == headline
    assert any("op times are scaled to the step" in w for w in report.warnings)


def test_the_headline_is_never_timed_again_for_op_times_that_read_slow(monkeypatch):
    """Op times that exceed the headline do not send it to be timed again: a re-timing chosen
    because the op passes read slow lands in the host's slow moments, and moved the headline up
    by a median 15–22 % in the fifth of quiet profiles where it happened (+3.3 … +4.6 % on
    average over all; BENCHMARKS.md, session 17). The headline is level 1's own timing, and
    the samples, ratios of it, describe the same moment."""
    from skyline_nb.profiler import level2

    real_op_times = level2.op_times

    def slow_op_times(*args, **kwargs):
        ops, starved = real_op_times(*args, **kwargs)
        ops.scale(1.5)  # every pass reads slow: a slow moment of the host, twice
        return ops, starved

    monkeypatch.setattr(level2, "op_times", slow_op_times)
    # slow beyond the tolerance whatever this machine's moment (1.5x alone was not, once in a
    # full suite run: the headline had read slow itself)
    monkeypatch.setattr(level2, "consistent", lambda level1, ops: False)
    report, headline = _profiled(monkeypatch, predict=True)
    assert report.iteration_ms == headline
    assert [s.iteration_ms for s in report.samples if s.batch_size == 8] == [headline]
    assert any("op times are scaled to the step" in w for w in report.warnings)
    assert impossible_values(report) == [], report.warnings


def _never_consistent(monkeypatch, op_times) -> tuple[object, float]:
    """Profile the example MLP with ``op_times`` for the instrumented passes, Σ ops never
    taken as consistent with the headline: the report and level 1's own headline."""
    from skyline_nb.profiler import level2

    monkeypatch.setattr(level2, "op_times", op_times)
    monkeypatch.setattr(level2, "consistent", lambda level1, ops: False)
    return _profiled(monkeypatch, predict=False)


def _profiled(monkeypatch, predict: bool) -> tuple[object, float]:
    """The example MLP's report at 8, and the headline level 1 measured (before anything
    after it could change it)."""
    from skyline_nb.profiler import session

    measured = []
    real_level1 = session.measure_level1

    def recorded_level1(*args, **kwargs):
        level1, warm = real_level1(*args, **kwargs)
        measured.append(level1.iteration_ms)
        return level1, warm

    monkeypatch.setattr(session, "measure_level1", recorded_level1)
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=8, device="cpu",
                     predict=predict)
    assert len(measured) == 1
    return report, measured[0]


@pytest.mark.parametrize(("excess", "noted"), [(0.02, False), (0.07, True)])
def test_op_times_a_little_over_the_step_are_noted_only_beyond_the_noise(monkeypatch, excess,
                                                                         noted):
    """Σ op times 2 % over the headline is within what the untracked share moves between
    profiles (±6 %): no note (it was on 19 of 32 quiet profiles of the examples). 7 % is noted,
    and neither is scaled (the tolerance is 10 %): the breakdown shows them as measured."""
    from skyline_nb.profiler import session

    real = session.reconciled_op_times

    def over_the_step(level1, *args, **kwargs):
        ops, _ = real(level1, *args, **kwargs)
        ops.scale((1 + excess) * level1.iteration_ms / ops.ops_ms())
        return ops, False

    monkeypatch.setattr(session, "reconciled_op_times", over_the_step)
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=8, device="cpu", predict=False)
    assert report.untracked_ms == pytest.approx(-excess * report.iteration_ms, rel=1e-6)
    notes = [w for w in report.warnings if "a little more than the whole step" in w]
    assert bool(notes) == noted, report.warnings
    assert impossible_values(report) == [], report.warnings


def test_op_times_a_busier_machine_inflated_are_scaled_to_the_headline(monkeypatch):
    """Instrumented runs that stay 3× slower than the headline (they waited for a CPU the
    headline's iterations did not) used to leave untracked time at −68 … −259 % under load (CI,
    2026-11-25). The breakdown now adds up to the step, keeps each op's measured share and says
    why."""
    from skyline_nb.profiler import level2

    real_op_times = level2.op_times
    shares = []

    def busier_op_times(*args, **kwargs):
        ops, starved = real_op_times(*args, **kwargs)
        ops.scale(3.0)
        shares.append([(r.forward_ms + (r.backward_ms or 0.0)) / ops.ops_ms() for r in ops.records])
        return ops, starved

    monkeypatch.setattr(level2, "op_times", busier_op_times)
    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     mlp.skyline_iteration_provider, batch_size=8, device="cpu", predict=False)
    assert impossible_values(report) == [], report.warnings
    assert abs(report.untracked_ms) <= 1e-6 * report.iteration_ms
    assert any("op times are scaled to the step" in w for w in report.warnings)
    assert not any("a little more than the whole step" in w for w in report.warnings)
    ops = [n for n in report.tree.walk() if n.kind == NodeKind.OP]
    reported = sorted(n.total_ms / report.iteration_ms for n in ops)
    assert reported == pytest.approx(sorted(shares[-1]), abs=1e-5)

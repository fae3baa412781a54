"""Which size comes third, 4× or ½× the user's batch, and what a refused ½× ends
(``sample_plan.sample_curve``, on a scripted machine)."""

from __future__ import annotations

import types

from scripted_machine import Machine, cpu_timed, sample

from skyline_nb.profiler import sample_plan


def test_where_the_budget_affords_4x_but_not_also_half_4x_is_measured(monkeypatch) -> None:
    """2× grew clearly, and the budget affords 4× or ½×, not both: 4×. The drag and the sizes
    a user asks about lie above their batch; from 8 on a CPU, ½–2× predicted 1.5–8× with
    6.5–11.1 % mean errors for the example Transformer and LSTM, 4× first 3.5–5.7 % at the
    same cost (BENCHMARKS.md, session 54). Each size takes its expected cost on the clock."""
    slow = Machine(lambda n: 2.0 * n + 10)
    clock = [0.0]
    timed = Machine(lambda n: slow.time(n))

    def measure(n: int) -> tuple[int, float]:
        clock[0] += sample_plan._cost_at(slow.time(16), slow.time(n), cpu_timed) / 1e3
        return timed(n)

    monkeypatch.setattr(sample_plan, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    four = sample_plan._cost_at(slow.time(16), 2 * slow.time(32), cpu_timed)  # as expected
    spent_2x = sample_plan._cost_at(slow.time(16), slow.time(32), cpu_timed)
    budget = spent_2x + four + 1.0  # ½× (8) does not fit after it
    found = sample_plan.sample_curve(
        measure, 16, slow.peak(16), slow.time(16), 1 << 40, tolerance=0.03,
        budget_ms=budget, timed_ms=cpu_timed)
    assert timed.calls == [32, 64] and sorted(found.peaks) == [16, 32, 64]
    monkeypatch.setattr(sample_plan, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))
    found, _ = sample(Machine(slow.time), 16, budget_ms=budget + 1e4)  # both fit: both
    assert sorted(found.peaks) == [8, 16, 32, 64]


def test_a_refused_half_ends_the_range_below_and_nothing_smaller_is_tried() -> None:
    machine = Machine(lambda n: 0.01 * n + 0.3, refuses=lambda n: n % 4 != 0)  # pairs of pairs
    found, models = sample(machine, 12)  # 2× grew: 4× (the budget affords it), ½× refused
    assert machine.calls[:3] == [24, 48, 6] and 3 not in machine.calls
    assert [r.batch_size for r in found.refused] == [6] and min(found.peaks) == 12
    assert models.can_manipulate and models.fails_at is None

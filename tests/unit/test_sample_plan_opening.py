"""A CPU's opening samples (``sample_plan._opening``): ½× first, then 4× without 2× where the
budget would have afforded both, else 2× as before; iterations under ``CHEAP_MS`` and a
refused ½× keep the plan that opens with 2×. On a scripted machine (no torch), where no time
passes, so the budget is spent at the plan's own estimates (``sample_cost.cost_at``)."""

from __future__ import annotations

import pytest
from scripted_machine import Machine, cpu_timed, sample

from skyline_nb.profiler.sample_cost import cost_at, line_ms
from skyline_nb.profiler.samples import CPU_SAMPLING


def line(n: int) -> float:
    return 2.0 + 0.5 * n  # 6 ms at 8: not cheap


def both_ms(user: int) -> float:
    """What 2× and then 4× are expected to cost after ½× (``_opening``'s test)."""
    times = {user // 2: line(user // 2), user: line(user)}
    double = line_ms(times, user, 2 * user)
    return cost_at(line(user), double, cpu_timed) + cost_at(line(user), 2 * double, cpu_timed)


def test_the_cpu_policy_opens_with_half_and_may_skip_double() -> None:
    assert CPU_SAMPLING.skip_double


def test_where_2x_and_4x_would_both_fit_4x_comes_without_2x() -> None:
    machine = Machine(line)
    found, models = sample(machine, 8, budget_ms=both_ms(8) + 1, reach=8, skip_double=True)
    assert machine.calls[:2] == [4, 32] and 16 not in machine.calls
    assert sorted(found.peaks) == [4, 8, 32] and found.reason is None
    assert models.can_manipulate
    for n in (12, 16, 24, 48, 64):
        assert models.predict_iteration_ms(n) == pytest.approx(line(n), rel=0.02)


def test_the_sizes_after_4x_get_what_they_would_have_got_after_2x() -> None:
    """The budget left after 4× is what it would have been had 2× run: no 8× with the 2×'s
    share (the whole profile stays as cheap as 2× and 4× together, less 2×)."""
    machine = Machine(line)
    sample(machine, 8, budget_ms=both_ms(8) + 1, reach=8, skip_double=True)
    assert 64 not in machine.calls


def test_where_they_would_not_both_fit_2x_comes_as_before() -> None:
    machine = Machine(line)
    found, _ = sample(machine, 8, budget_ms=90.0, reach=8, skip_double=True)
    assert both_ms(8) > 90.0
    assert machine.calls == [4, 16] and sorted(found.peaks) == [4, 8, 16]


def test_cheap_iterations_keep_the_plan_that_opens_with_2x() -> None:
    """An MLP of a fraction of a millisecond: its drag needs the sizes near its batch (a
    notebook's noise), and 2× costs it next to nothing."""
    machine = Machine(lambda n: 0.01 * n + 0.3)
    sample(machine, 16, skip_double=True)
    assert machine.calls[0] == 32


def test_a_refused_half_opens_with_2x_and_keeps_the_refusal() -> None:
    machine = Machine(line, refuses=lambda n: n < 8)
    found, models = sample(machine, 8, budget_ms=1e9, reach=8, skip_double=True)
    assert machine.calls[:3] == [4, 16, 32]
    assert [r.batch_size for r in found.refused] == [4] and min(found.peaks) == 8
    assert models.can_manipulate and models.fails_below == 4


def test_a_time_that_barely_grows_goes_to_4x_whatever_the_budget() -> None:
    """As after a 2× that did not grow clearly: a slope that small needs the wider range to
    show above the noise (an LSTM at batch 4 and one thread measured ½×, 1×, 2× only)."""
    machine = Machine(lambda n: 10.0 + 0.01 * n)
    found, _ = sample(machine, 8, budget_ms=50.0, reach=8, skip_double=True)
    assert machine.calls[:2] == [4, 32] and 16 not in machine.calls
    assert sorted(found.peaks)[:3] == [4, 8, 32]

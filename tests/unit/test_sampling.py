"""Batch-size sampling against a fake, deterministic machine (no torch, no device)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler.sampling import MAX_FAILURES, choose_sizes

MB = 1 << 20


class FakeOutOfMemory(Exception):
    """Stands in for torch.OutOfMemoryError."""


@dataclass
class Machine:
    """Iteration time a·n + b ms and peak c·n + d bytes; out of memory above ``oom_above``."""

    a: float = 0.5
    b: float = 4.0
    c: int = MB
    d: int = 50 * MB
    oom_above: int | None = None
    error: type[BaseException] = MemoryError
    calls: list[int] = field(default_factory=list)

    def peak(self, n: int) -> int:
        return self.c * n + self.d

    def __call__(self, n: int) -> int:
        self.calls.append(n)
        if self.oom_above is not None and n > self.oom_above:
            raise self.error(f"fake out of memory at {n}")
        return self.peak(n)


def run(
    machine: Machine, user: int, capacity: int, **kwargs: object
) -> tuple[list[int], str | None]:
    kwargs.setdefault("max_points", 4)  # the back-off cases below are written for four points
    peaks, reason = choose_sizes(machine, user, machine.peak(user), capacity, **kwargs)
    assert list(peaks) == sorted(peaks)
    return list(peaks), reason


def test_by_default_three_points_the_users_2x_and_4x() -> None:
    machine = Machine()
    peaks, reason = choose_sizes(machine, 8, machine.peak(8), 64 << 30)
    assert peaks == {n: machine.peak(n) for n in (8, 16, 32)} and reason is None
    assert machine.calls == [16, 32]


def test_heavy_weights_cap_the_first_try_then_the_samples_spread_to_4x() -> None:
    """Weights dominate the peak (the cell-editing tests' MLP under a 16 MiB budget): the
    one-point bound caps "2×" at 50; with two points the line allows far more, and 128 comes
    before 64, which would leave three points spanning only 2× (noisy slopes)."""
    machine = Machine(c=5 << 10, d=10 * MB)  # 5 KiB per sample on 10 MiB
    sizes, reason = run(machine, 32, 16 * MB, max_points=3)
    assert machine.calls == [50, 128] and sizes == [32, 50, 128] and reason is None


def test_plenty_of_memory_and_four_points_gives_2x_4x_and_8x() -> None:
    machine = Machine()
    sizes, reason = run(machine, 8, 64 << 30)
    assert sizes == [8, 16, 32, 64] and reason is None
    assert machine.calls == [16, 32, 64]  # each after the one below refined the estimate


def test_three_points_when_asked_for_three_and_half_when_asked_for_more() -> None:
    assert run(Machine(), 8, 64 << 30, max_points=3) == ([8, 16, 32], None)
    assert run(Machine(), 8, 64 << 30, max_points=6) == ([2, 4, 8, 16, 32, 64], None)


def test_fits_from_the_samples_recover_the_machine() -> None:
    machine = Machine(a=0.25, b=3.0, c=3 * MB, d=70 * MB)
    peaks, reason = choose_sizes(machine, 16, machine.peak(16), 8 << 30)
    models = PerformanceModels.from_samples(
        list(peaks), [machine.a * n + machine.b for n in peaks], list(peaks.values()),
        8 << 30, reason,
    )
    assert models.can_manipulate
    assert models.time.slope == pytest.approx(0.25) and models.memory.slope == pytest.approx(3 * MB)


def test_memory_limit_below_4x_spreads_below_the_estimated_max() -> None:
    machine = Machine()
    capacity = machine.peak(20)
    sizes, reason = run(machine, 8, capacity)
    assert reason is None
    assert sizes == [4, 8, 16, 20]  # not 9, which the one-point bound allows first
    assert all(machine.peak(n) <= capacity for n in machine.calls)  # never measured beyond it


def test_heavy_weights_first_estimate_is_refined_by_the_second_point() -> None:
    # Weights dominate: peak/batch overestimates the slope, so 2× looks infeasible at first.
    machine = Machine(c=MB, d=2000 * MB)
    capacity = machine.peak(64)
    sizes, reason = run(machine, 8, capacity)
    assert reason is None and len(sizes) == 4
    assert max(sizes) == 32  # 4× reached once the line is known
    assert all(machine.peak(n) <= capacity for n in machine.calls)


def test_user_batch_near_the_maximum_goes_below() -> None:
    machine = Machine()
    sizes, reason = run(machine, 8, machine.peak(8) + MB // 2)
    assert sizes == [1, 2, 4, 8] and reason is None
    assert max(machine.calls) < 8


def test_user_batch_over_the_budget_measures_only_what_is_predicted_to_fit() -> None:
    machine = Machine(c=MB, d=0)
    sizes, reason = run(machine, 64, machine.peak(20))
    assert reason is None
    assert all(machine.peak(n) <= machine.peak(20) for n in machine.calls)
    assert sizes[-1] == 64 and sizes[:-1] == sorted(machine.calls)


def test_tiny_capacity_measures_nothing_and_says_why() -> None:
    machine = Machine()
    sizes, reason = run(machine, 8, MB)
    assert sizes == [8] and machine.calls == []
    assert "predicted to exceed the memory capacity" in reason
    assert "predictions need 3" in reason


def test_out_of_memory_halves_toward_the_last_good_size() -> None:
    machine = Machine(oom_above=26)
    sizes, reason = run(machine, 8, 0)  # capacity unknown: only errors limit the range
    assert machine.calls == [16, 32, 24, 4]
    assert sizes == [4, 8, 16, 24] and reason is None


def test_custom_out_of_memory_type_is_caught_and_others_propagate() -> None:
    machine = Machine(oom_above=12, error=FakeOutOfMemory)
    sizes, _ = run(machine, 8, 0, oom_errors=(FakeOutOfMemory,))
    assert max(sizes) <= 12 and len(sizes) >= 3
    with pytest.raises(FakeOutOfMemory):
        run(Machine(oom_above=12, error=FakeOutOfMemory), 8, 0)  # default: MemoryError only


def test_other_errors_propagate() -> None:
    def broken(n: int) -> int:
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        choose_sizes(broken, 8, 100, 0)


def scripted(outcomes: Iterable[bool], machine: Machine) -> Callable[[int], int]:
    """A measure that fails (out of memory) on the calls marked False, whatever the size."""
    it = iter(outcomes)

    def measure(n: int) -> int:
        if not next(it, True):
            machine.calls.append(n)
            raise MemoryError("fragmented")
        return machine(n)

    return measure


def test_transient_out_of_memory_sequence_still_gets_enough_points() -> None:
    machine = Machine()
    peaks, reason = choose_sizes(scripted([False, True, True, True], machine), 8,
                                 machine.peak(8), 0)
    sizes = list(peaks)
    assert reason is None and len(sizes) >= 3
    assert machine.calls[0] == 16  # after the failure at 16: halfway to the last good size, 12
    assert 12 in sizes


def test_after_two_failures_above_only_smaller_sizes_are_tried() -> None:
    machine = Machine(oom_above=8)
    assert run(machine, 8, 0) == ([1, 2, 4, 8], None)
    assert machine.calls == [16, 12, 4, 2, 1]


def test_every_measurement_out_of_memory_gives_up_with_a_reason() -> None:
    always = Machine(oom_above=0)
    peaks, reason = choose_sizes(always, 8, 8 * MB, 0)
    assert peaks == {8: 8 * MB}
    assert len(always.calls) == MAX_FAILURES
    assert "ran out of memory" in reason and "predictions need 3" in reason


def test_measured_peak_over_the_budget_counts_as_out_of_memory() -> None:
    class SuperLinear(Machine):
        def peak(self, n: int) -> int:
            return self.c * n * n // 8 + self.d

    machine = SuperLinear()
    capacity = machine.peak(24)
    sizes, reason = run(machine, 8, capacity)
    # The line through 8 and 16 predicts 29 fits; it does not, so it is dropped and the next
    # try is halfway back to 16.
    assert machine.calls == [16, 29, 22, 4]
    assert sizes == [4, 8, 16, 22]
    assert reason is None and all(machine.peak(n) <= capacity for n in sizes)


def test_batch_one_with_plenty_of_memory() -> None:
    assert run(Machine(), 1, 64 << 30) == ([1, 2, 4, 8], None)
    machine = Machine(c=MB, d=0)
    assert run(machine, 1, machine.peak(4)) == ([1, 2, 3, 4], None)  # between, for want of ½


def test_batch_one_at_the_maximum_cannot_get_three_points() -> None:
    machine = Machine()
    sizes, reason = run(machine, 1, machine.peak(2))
    assert sizes == [1, 2]
    assert reason == (
        "only 2 batch sizes could be measured (1, 2): other batch sizes are predicted to exceed"
        " the memory capacity (52.0 MiB); no batch size is smaller than 1; predictions need 3"
    )


def test_huge_batch() -> None:
    machine = Machine(c=1024, d=MB)
    assert run(machine, 4096, 64 << 30) == ([4096, 8192, 16384, 32768], None)
    sizes, reason = run(machine, 4096, machine.peak(4096))
    assert sizes == [1024, 2048, 4096] or sizes == [512, 1024, 2048, 4096]
    assert reason is None


@pytest.mark.parametrize(("user", "points"), [(0, 4), (8, 1)])
def test_invalid_arguments(user: int, points: int) -> None:
    with pytest.raises(ValueError):
        choose_sizes(Machine(), user, 1, 0, max_points=points)


@settings(max_examples=200, deadline=None)
@given(
    user=st.integers(1, 5000),
    c=st.integers(1, 10 * MB),
    d=st.integers(0, 1 << 32),
    capacity_factor=st.floats(0.0, 10.0),
    oom_above=st.one_of(st.none(), st.integers(1, 20000)),
    max_points=st.integers(3, 6),
)
def test_sampling_invariants(
    user: int, c: int, d: int, capacity_factor: float, oom_above: int | None, max_points: int
) -> None:
    machine = Machine(c=c, d=d, oom_above=oom_above)
    capacity = int(machine.peak(user) * capacity_factor)
    peaks, reason = choose_sizes(machine, user, machine.peak(user), capacity,
                                 max_points=max_points)
    sizes = list(peaks)
    assert sizes == sorted(set(sizes)) and user in sizes
    assert len(sizes) <= max_points
    assert len(machine.calls) == len(set(machine.calls))  # never the same size twice
    assert len(machine.calls) <= max_points - 1 + MAX_FAILURES
    assert all(n >= 1 for n in machine.calls) and user not in machine.calls
    assert (reason is None) == (len(sizes) >= 3)
    kept = {n: peak for n, peak in peaks.items() if n != user}
    assert all(capacity <= 0 or peak <= capacity for peak in kept.values())
    assert all(oom_above is None or n <= oom_above for n in kept)
    assert all(n <= 8 * user for n in machine.calls)

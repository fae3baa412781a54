"""The profile's share done (``Reporter``): the fraction of the expected iterations while the
work stays as expected, never back when a stage brings more, the whole at the end."""

from __future__ import annotations

import pytest

from skyline_nb.profiler.progress import EXPECTED_ITERATIONS, Progress, Reporter


def _run(stages: list[float], predict: bool = True) -> list[Progress]:
    seen: list[Progress] = []
    reporter = Reporter(seen.append, predict)
    reporter.iteration_ms = 10.0
    for i, iterations in enumerate(stages):
        reporter.stage(f"stage {i}", iterations)
    reporter.finish()
    return seen


def test_while_the_work_is_as_expected_the_share_is_the_iterations_done() -> None:
    seen = _run([7, 2, 5, 5, 2])
    done = [0, 7, 9, 14, 19]
    assert [p.done for p in seen[:-1]] == pytest.approx([d / EXPECTED_ITERATIONS for d in done])
    assert seen[1].remaining_s == pytest.approx((EXPECTED_ITERATIONS - 7) * 10.0 / 1000)


def test_more_work_than_expected_never_moves_the_share_back() -> None:
    # A busy machine: 26-iteration samples and many op-timing runs, 100 in all against 35.
    seen = _run([7, 2, 5, 5, 2, 26, 26, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5])
    shares = [p.done for p in seen]
    assert shares == sorted(shares)
    assert all(0.0 <= s <= 1.0 for s in shares)
    assert shares[-2] < 1.0 and shares[-1] == 1.0
    assert all(p.remaining_s >= 0 for p in seen)


def test_the_end_is_the_whole_share_and_nothing_left_when_less_ran_than_expected() -> None:
    last = _run([7, 2])[-1]
    assert (last.stage, last.done, last.remaining_s) == ("done", 1.0, 0.0)

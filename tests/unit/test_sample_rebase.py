"""The user's batch timed again beside the samples when the machine's pace moved between the
headline and them (``sample_plan._rebase``).

Issue 12's MLP re-profiled in Notebook 7 (session 29's probe): in 2 of 12 profiles the headline
(16: 0.50 ms) was timed in a slower pace of the host than every sample after it, which agreed
with each other (4: 0.29, 32: 0.41, 64: 0.58 ms; 16 read 0.36 in the profiles around), and the
drag was refused for the user's batch sitting off the curve.
"""

from __future__ import annotations

import pytest
from scripted_machine import Machine, sample
from test_sample_plan import scripted_warm_trial

from skyline_nb.categories import Categories
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler import samples
from skyline_nb.profiler.device import resolve_device
from skyline_nb.profiler.progress import Reporter
from skyline_nb.profiler.sample_plan import Samples

# Profile 6 of the probe (ms): the samples and each one timed again, the headline at 16.
FIRST = {4: 0.291, 8: 0.324, 32: 0.413, 64: 0.577, 128: 0.834, 256: 1.349, 512: 2.427,
         1024: 4.865}
AGAIN = {4: 0.293, 8: 0.326, 32: 0.419, 64: 0.561, 128: 0.819, 256: 1.256, 512: 2.396,
         1024: 4.529}
HEADLINE = 0.502


def nb7_profile(user_again: float) -> tuple[Samples, list[int], PerformanceModels]:
    """The probe's profile 6 on a scripted machine; the user's batch timed again reads
    ``user_again``."""
    machine = Machine(lambda n: HEADLINE if n == 16 else FIRST[n])
    retimed: list[int] = []

    def retime(n: int, expected: float | None) -> float:
        retimed.append(n)
        return user_again if n == 16 else AGAIN[n]

    found, models = sample(machine, 16, budget_ms=250.0, tolerance=0.10, retime=retime)
    return found, retimed, models


def test_a_headline_in_another_pace_than_the_samples_scales_them_to_it() -> None:
    found, retimed, models = nb7_profile(user_again=0.356)
    assert retimed[0] == 16
    assert found.base == pytest.approx(0.356 / HEADLINE)
    assert found.times[16] == HEADLINE  # the headline stays what the user's loop measured
    assert found.times[32] == pytest.approx(FIRST[32] * HEADLINE / 0.356)
    assert models.can_manipulate, models.reason
    # the other profiles of that run, in the headline's slower pace: 32 read 0.57-0.63 ms,
    # 64 0.72-0.79 ms
    assert 0.55 < models.predict_iteration_ms(32) < 0.65
    assert 0.70 < models.predict_iteration_ms(64) < 0.85


def test_a_headline_its_batch_timed_again_confirms_stays_and_the_others_are_timed_again() -> None:
    found, retimed, _ = nb7_profile(user_again=0.49)
    assert found.base == 1.0 and found.times[16] == HEADLINE
    assert retimed[0] == 16 and len(retimed) > 1  # then the samples, as before


def test_the_users_batch_is_not_timed_again_where_fewer_than_three_sizes_can_outvote_it() -> None:
    """Two other sizes always agree on a line; the headline, timed longest, is believed."""
    first = {8: 25.4, 32: 38.0}
    machine = Machine(lambda n: first.get(n, 0.6 * n + 12.4))
    retimed: list[int] = []

    def retime(n: int, expected: float | None) -> float:
        retimed.append(n)
        return 0.6 * n + 12.4

    found, _ = sample(machine, 16, budget_ms=200.0, tolerance=0.06, retime=retime)
    assert 16 not in retimed and retimed and found.base == 1.0


def test_the_report_scales_the_samples_and_says_so(monkeypatch) -> None:
    """On the real WarmTrial: the headline at 8 runs in a pace 60 % slower than the samples;
    the report's samples are each size's time over the user's batch timed beside them, at the
    headline, and a warning says by how much the pace moved."""
    state = {"size": 8, "pace": 1.6}
    headline, warm = scripted_warm_trial(monkeypatch, lambda: None, state,
                                         lambda: state["pace"] * (0.2 * state["size"] + 0.4))
    assert headline.iteration_ms == pytest.approx(3.2)
    state["pace"] = 1.0
    warnings: list[str] = []
    sampled = samples.sample_sizes(warm, resolve_device("cpu"), warnings,
                                   Reporter(None, True))
    ratios = {t.batch_size: t.ratio for t in sampled.timings}
    assert ratios[16] == pytest.approx(3.6 / 2.0)
    assert warnings == [samples.pace_warning(8, headline.iteration_ms, 2.0 / 3.2)]
    assert "took 2 ms against the headline's 3.20 ms" in warnings[0]
    assert headline.iteration_ms == pytest.approx(3.2)
    _, models = samples.fitted(headline, sampled, resolve_device("cpu"), Categories(), [])
    assert models.can_manipulate, models.reason
    assert models.predict_iteration_ms(16) == pytest.approx(1.6 * 3.6, rel=0.02)

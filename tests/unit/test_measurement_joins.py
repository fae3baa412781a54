""""Measure at N" on a real profile (``measurement.measured``): the widget's trait holds the
prediction made before it, and N joins the report's samples unless no curve can take it;
either way the report never shows an impossible value."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import skyline_nb
from skyline_nb.examples import mlp
from skyline_nb.measurement import measured
from skyline_nb.profiler.device import HEAP
from skyline_nb.profiler.prepare import Measured, measure_iteration
from skyline_nb.report_checks import impossible_values

PROVIDERS = (mlp.skyline_model_provider, mlp.skyline_input_provider,
             mlp.skyline_iteration_provider)


@pytest.fixture(scope="module")
def report():
    for _ in range(4):  # a noisy host may leave a profile without a curve to drag
        profiled = skyline_nb.profile(*PROVIDERS, batch_size=16)
        if profiled.models.can_manipulate:
            return profiled
    pytest.fail(f"no profile of the MLP could drag: {profiled.models.reason}")


def at(report, size, ms, peak, **kwargs) -> Measured:
    """A measurement of the profile's model (its parameters) at ``size``."""
    return Measured(size, ms, peak, weights={w.name: w.bytes for w in report.weights}, **kwargs)


def test_a_measurement_beyond_the_samples_joins_them_or_says_why(report) -> None:
    size = 4 * max(s.batch_size for s in report.samples)
    before = report.models.predict_iteration_ms(size)
    result = measure_iteration(*PROVIDERS, size)
    after, value = measured(report, result)
    assert value["predicted_ms"] == before
    assert value["predicted_peak_bytes"] == report.models.predict_peak_bytes(size)
    assert value["throughput"] == 1000.0 * size / value["iteration_ms"]
    if value["joined"]:
        sample = next(s for s in after.samples if s.batch_size == size)
        assert sample.iteration_ms == result.iteration_ms
        assert sample.peak_bytes == result.peak_bytes
        # within the tolerance of the curve, as the join judges it (``trust.spread``: relative
        # to the curve; relative to the measurement a kept curve 14.4 % above it read 16.8 %)
        curve_ms = after.models.predict_iteration_ms(size)
        assert abs(result.iteration_ms / curve_ms - 1) <= report.models.tolerance + 1e-9
        assert after.models.measured_range[1] == size
        assert len(after.samples) == len(report.samples) + 1
    else:  # no curve goes near it and the samples (the host's pace moved): said, not drawn
        assert value["not_joined"] and after is report
    assert impossible_values(after) == []
    assert size not in {s.batch_size for s in report.samples}  # the profile's report as it was


def test_a_measurement_on_the_curve_joins_it(report) -> None:
    """Measured where the curve says (the host's pace unchanged): it must join."""
    size = 3 * max(s.batch_size for s in report.samples)
    ms = report.models.predict_iteration_ms(size)
    after, value = measured(report, at(report, size, ms, report.models.memory(size)))
    assert value["joined"] and value["not_joined"] is None and value["curve_kept"]
    assert not value["other_model"]
    assert after.models.time.lines == report.models.time.lines
    assert after.models.measured_range == (report.models.measured_range[0], size)
    assert after.models.predict_iteration_ms(size) == pytest.approx(ms, rel=1e-6)
    assert after.iteration_ms == report.iteration_ms and after.tree is report.tree
    assert impossible_values(after) == []


def test_steps_that_waited_for_a_cpu_join_as_measured(report) -> None:
    """As the profile's own samples on a busy machine: the widget says the time may be high
    (``waited``), and a measurement there again replaces it."""
    size = 2 * max(s.batch_size for s in report.samples)
    ms = report.models.predict_iteration_ms(size)
    slow, value = measured(report, at(report, size, 1.5 * ms, 1, converged=False))
    seen = (value, [(s.batch_size, s.iteration_ms) for s in report.samples],
            report.models.time.shape)  # what a failure needs to be understood
    assert value["waited"] and value["joined"] and not value["curve_kept"], seen
    # a curve through them all is taken where it goes within the tolerance of N (joined.py):
    # exactly through it only where a piece is drawn to it
    tolerance = report.models.tolerance
    assert slow.models.predict_iteration_ms(size) == pytest.approx(1.5 * ms, rel=tolerance), seen
    again, value = measured(slow, at(report, size, ms, 1))
    assert value["joined"] and [s.batch_size for s in again.samples].count(size) == 1, (
        value, seen)
    assert again.models.predict_iteration_ms(size) == pytest.approx(ms, rel=tolerance), seen


def test_the_profiles_own_batch_size_or_a_profile_without_curves_joins_nothing(report) -> None:
    again = at(report, report.batch_size, report.iteration_ms, report.peak_bytes)
    after, value = measured(report, again)
    assert after is report and not value["joined"] and value["not_joined"] is None
    bare = replace(report, models=None)
    after, value = measured(bare, at(report, 64, 1.0, 1))
    assert after is bare and value["predicted_ms"] is None and value["not_joined"] is None


def test_a_measurement_of_another_model_joins_nothing_and_says_so(report) -> None:
    """The providers a widget holds may build another model since (a class they use defined
    again in a later cell): its time is no point of this profile's curve."""
    wider = (lambda: torch.nn.Sequential(torch.nn.Linear(256, 64), torch.nn.ReLU(),
                                         torch.nn.Linear(64, 10)),
             *PROVIDERS[1:])
    # beyond the samples, and at the profile's own batch size ("Measure at 16" before a drag)
    for size in (2 * max(s.batch_size for s in report.samples), report.batch_size):
        after, value = measured(report, measure_iteration(*wider, size))
        assert after is report and not value["joined"] and value["other_model"]
        assert value["not_joined"].startswith(
            "the model measured is not this profile's: its parameters hold 66.8 KiB in 4 "
            "tensors, the profile's 1.52 MiB in 6. ")


def test_a_size_that_would_outgrow_the_ram_is_not_measured(report, monkeypatch) -> None:
    """Nothing stops a CPU step that outgrows the kernel's memory but the kernel's death (in a
    container, its limit): such a size is refused, with the numbers, before anything runs."""
    import skyline_nb.measurement as measurement

    size = 8 * max(s.batch_size for s in report.samples)
    need = report.models.predict_peak_bytes(size)
    monkeypatch.setattr(measurement, "memory_headroom", lambda: int(need))
    monkeypatch.setattr(measurement, "available_ram_bytes", lambda: int(need))  # no heap room
    refusal = measurement.outgrows(report, size) or ""
    assert refusal.startswith(f"measuring at batch size {size} would likely need more than the ")
    assert "may still take (its container's memory limit less its usage): " in refusal
    assert refusal.endswith("measure at a smaller batch size")
    monkeypatch.setattr(measurement, "available_ram_bytes", lambda: int(HEAP * need))
    assert measurement.outgrows(report, size) is None
    monkeypatch.setattr(measurement, "available_ram_bytes", lambda: 0)  # unknown: not refused
    assert measurement.outgrows(report, size) is None
    assert measurement.outgrows(replace(report, models=None), size) is None


def test_the_widget_shows_the_refusal_and_runs_nothing(report, monkeypatch) -> None:
    """The widget's "Measure at N" message: the refusal is its error, and no step ran."""
    import skyline_nb.measurement as measurement
    import skyline_nb.profiler.prepare as prepare
    from skyline_nb.live import LiveProfile
    from skyline_nb.request import ProfileRequest

    def ran(*_args, **_kwargs):
        raise AssertionError("measured")

    monkeypatch.setattr(prepare, "measure_iteration", ran)
    monkeypatch.setattr(measurement, "available_ram_bytes", lambda: 2 * report.peak_bytes)
    live = LiveProfile(ProfileRequest(find=lambda: PROVIDERS), None, ran)
    try:
        live.report = report
        live.widget._handle_custom_msg({"kind": "measure", "batch_size": 1024}, [])
        assert live.widget.error.startswith(
            "WouldOutgrowMemory: measuring at batch size 1024 would likely need more than")
        live.widget._handle_custom_msg({"kind": "measure", "batch_size": report.batch_size}, [])
        assert live.widget.error.startswith("AssertionError: measured")  # it ran this time
    finally:
        live.widget.close()

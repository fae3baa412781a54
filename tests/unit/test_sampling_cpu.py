"""Sampling with the real CPU measurement: exact memory lines and the CPU-budget back-off."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # real iterations: about 10 s on a busy 2-core machine

from skyline_nb.examples import mlp  # noqa: E402
from skyline_nb.models.linear import PerformanceModels  # noqa: E402
from skyline_nb.profiler.device import resolve_device  # noqa: E402
from skyline_nb.profiler.iteration import measure_iteration  # noqa: E402
from skyline_nb.profiler.sampling import collect_samples  # noqa: E402

PROVIDERS = (mlp.skyline_model_provider, mlp.skyline_input_provider,
             mlp.skyline_iteration_provider)


def measurer(budget: int | None):
    device = resolve_device("cpu", budget)
    return device, lambda batch: measure_iteration(*PROVIDERS, batch, device)


def test_samples_fit_an_exact_memory_line_and_invert() -> None:
    device, measure = measurer(None)
    first = measure(8)
    samples, reason = collect_samples(measure, first, device.capacity_bytes(),
                                      oom_errors=device.oom_types, max_points=3)
    assert reason is None and [s.batch_size for s in samples] == [8, 16, 32]
    models = PerformanceModels.from_samples(
        [s.batch_size for s in samples], [s.iteration_ms for s in samples],
        [s.peak_bytes for s in samples], device.capacity_bytes(),
    )
    assert models.memory.slope > 0 and models.memory.r2 == pytest.approx(1.0)
    for batch in (8, 16, 32):
        assert models.batch_size_for_memory(models.predict_peak_bytes(batch)) == batch


def test_cpu_budget_exceeded_backs_off() -> None:
    _, unlimited = measurer(None)
    first, at_16 = unlimited(8), unlimited(16)
    # The budget lets 16 through but not 32; the capacity passed to the sampler is generous,
    # so 32 is tried and the CPU tracker's CPUOutOfMemoryError is what stops it.
    budget = at_16.peak_bytes + (at_16.peak_bytes - first.peak_bytes) // 2
    device, measure = measurer(budget)
    samples, reason = collect_samples(measure, first, 10 * budget,
                                      oom_errors=device.oom_types, max_points=3)
    sizes = [s.batch_size for s in samples]
    assert reason is None and 32 not in sizes and 16 in sizes
    assert all(s.peak_bytes <= budget for s in samples)

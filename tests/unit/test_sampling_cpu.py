"""Sampling with the real CPU measurement: exact memory lines and the CPU-budget back-off."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # real iterations: about 10 s on a busy 2-core machine

from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

from scripted_chunks import script_chunks  # noqa: E402

from skyline_nb.examples import mlp  # noqa: E402
from skyline_nb.models.linear import PerformanceModels  # noqa: E402
from skyline_nb.profiler import iteration  # noqa: E402
from skyline_nb.profiler.device import resolve_device  # noqa: E402
from skyline_nb.profiler.iteration import measure_iteration  # noqa: E402
from skyline_nb.profiler.providers import Trial  # noqa: E402
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


def _counting_trial() -> tuple[Callable[[], Trial], list[int]]:
    steps = [0]

    def step() -> None:
        steps[0] += 1

    def build() -> Trial:
        return Trial(torch.nn.Linear(2, 2), step, (), {}, [], "test")

    return build, steps


def test_the_profile_trial_is_built_once_and_each_sample_costs_six_iterations(monkeypatch):
    """40 ms iterations: the fresh trial takes 2 tracked warm-ups, 2 reference iterations
    (under the memory reports: the first absorbs frees of older blocks) and 5 timed ones; a
    sample at another size 2 reference iterations (one on the old inputs) and 2 timed that
    agree, each followed by one at the user's batch (the ratio of the two is what counts)."""
    script_chunks(monkeypatch, [(40.0, 0.0)])
    build, steps = _counting_trial()
    device = resolve_device("cpu")
    inputs = lambda n: ((), {}, [torch.zeros(n)])  # noqa: E731
    headline, warm = iteration.measure_level1(build, device, 8, inputs_for=inputs)
    assert headline.converged and headline.iteration_ms == 40.0 and steps[0] == 2 + 2 + 5
    steps[0] = 0
    sample = warm.measure_at(16)
    assert sample.converged and sample.iteration_ms == 40.0 and steps[0] == 2 + 2 + 2
    assert sample.peak_bytes == headline.peak_bytes + 8 * 4  # 8 more float32 input elements


@pytest.mark.parametrize("example", ["mlp", "cnn", "transformer", "lstm"])
def test_warm_samples_have_the_peak_of_a_fresh_trial_to_the_byte(example: str) -> None:
    """A sample on the profile's warm trial (new inputs, step peaks compared with the user's
    batch) equals the tracked peak of a model built fresh at that size: to the byte for these
    models from batch 16, and within one 64-byte block for the Transformer from batch 8 (a
    block alive across iterations that the warm windows see differently)."""
    import importlib

    from skyline_nb.profiler.isolation import isolated
    from skyline_nb.profiler.providers import build_trial, load_providers
    from skyline_nb.profiler.stacks import UserCode

    module = importlib.import_module(f"skyline_nb.examples.{example}")
    providers = load_providers(module.skyline_model_provider, module.skyline_input_provider,
                               module.skyline_iteration_provider, UserCode(Path(".")))
    device = resolve_device("cpu")

    def fresh(n: int) -> tuple[iteration.IterationResult, iteration.WarmTrial]:
        return iteration.measure_level1(lambda: build_trial(providers, n, device), device, n,
                                        inputs_for=iteration.warm_inputs(providers, device))

    with isolated(device):
        _, warm = fresh(8)
        sampled = {n: warm.measure_at(n).peak_bytes for n in (16, 4)}
        del warm
        expected = {n: fresh(n)[0].peak_bytes for n in (16, 4)}
    assert all(abs(sampled[n] - expected[n]) <= 64 for n in expected), (sampled, expected)


def test_with_the_users_profiler_running_samples_fall_back_to_the_tracker() -> None:
    """torch refuses a second profiler: the live-storage tracker measures both sides."""
    from skyline_nb.profiler.providers import build_trial, load_providers
    from skyline_nb.profiler.stacks import UserCode

    providers = load_providers(*PROVIDERS, UserCode(Path(mlp.__file__).parent))
    device = resolve_device("cpu")
    inputs = iteration.warm_inputs(providers, device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        _, warm = iteration.measure_level1(lambda: build_trial(providers, 8, device), device, 8,
                                           inputs_for=inputs)
        sampled = warm.measure_at(16).peak_bytes
        fresh, _ = iteration.measure_level1(lambda: build_trial(providers, 16, device), device,
                                            16)
    assert sampled == fresh.peak_bytes > 4 * 2**20

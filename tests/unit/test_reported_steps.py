"""A measured step needs the iteration before it under the CPU allocator's reports (its frees
are reported only for blocks allocated while it reported); where the trial's last iteration
ran there on the same inputs, that one serves and no iteration of the user's is spent on it.

The memory run follows level 1's warm-up window this way (``session.profile`` on a CPU): one
of the user's iterations less in every profile (the example CNN at 2 threads: 31.4 → 28.5 of
its iterations, BENCHMARKS.md, session 39)."""

from __future__ import annotations

import pytest
import torch

from skyline_nb.examples import cnn, mlp
from skyline_nb.profiler.iteration import WarmTrial, measure_level1
from skyline_nb.profiler.prepare import prepare
from skyline_nb.profiler.providers import InputsAtAnySize, build_trial
from skyline_nb.profiler.step_peak import MeasuredStep, measured_step

PROVIDERS = {
    "mlp": (mlp.skyline_model_provider, mlp.skyline_input_provider,
            mlp.skyline_iteration_provider),
    "cnn": (cnn.skyline_model_provider, cnn.skyline_input_provider,
            cnn.skyline_iteration_provider),
}


def _warm(name: str, batch: int, before_timing=None) -> WarmTrial:
    run = prepare(*PROVIDERS[name], batch_size=batch, device="cpu")
    _, warm = measure_level1(lambda: build_trial(run.providers, batch, run.device), run.device,
                             batch, inputs_for=InputsAtAnySize(run.providers, batch, run.device),
                             before_timing=before_timing)
    return warm


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_step_right_after_the_warm_ups_window_is_measured_without_one_of_its_own(
        name: str) -> None:
    found: list[tuple[int, MeasuredStep]] = []

    def right_after(warm: WarmTrial) -> None:
        began = warm.trial.steps
        step = measured_step(warm.trial, warm.device, warm.user_inputs)
        found.append((warm.trial.steps - began, step))

    warm = _warm(name, 16, right_after)
    [(ran, chained)] = found
    assert ran == 1
    # the same step measured after an iteration of its own reads the same bytes
    warm.trial.sizes_known_through = -1
    began = warm.trial.steps
    again = measured_step(warm.trial, warm.device, warm.user_inputs)
    assert warm.trial.steps - began == 2
    assert (again.added, again.by_phase) == (chained.added, chained.by_phase)


def test_a_step_on_other_inputs_or_unreported_in_between_asks_for_an_iteration_first() -> None:
    warm = _warm("mlp", 16)  # its headline's steps ran after the window
    began = warm.trial.steps
    measured_step(warm.trial, warm.device, warm.user_inputs)
    assert warm.trial.steps - began == 2
    began = warm.trial.steps
    measured_step(warm.trial, warm.device, warm.user_inputs)  # right after a reported one
    assert warm.trial.steps - began == 1
    warm.peak_at(32, categorize=False)  # reported, but on other inputs: they kept 32's
    began = warm.trial.steps
    measured_step(warm.trial, warm.device, warm.user_inputs)
    assert warm.trial.steps - began == 2
    warm.trial.step()
    began = warm.trial.steps
    measured_step(warm.trial, warm.device, warm.user_inputs)
    assert warm.trial.steps - began == 2
    assert torch.is_grad_enabled()


def test_an_out_of_memory_in_the_memory_run_is_raised_as_it_was() -> None:
    """The memory run is inside level 1 on a CPU, whose handler reads an out-of-memory as the
    user's batch not fitting ("try a smaller batch size"); the batch ran there: the error
    stays the step's own."""
    from torch import nn

    from skyline_nb.profiler.session import profile

    def iteration_provider(model: nn.Module):
        def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
            loss = nn.functional.cross_entropy(model(x), y)
            if torch._C._len_torch_dispatch_stack() > 0:  # only the memory run's modes
                raise torch.OutOfMemoryError("out of memory under the instrumentation")
            loss.backward()
        return iteration

    with pytest.raises(torch.OutOfMemoryError, match="under the instrumentation"):
        profile(mlp.skyline_model_provider, mlp.skyline_input_provider, iteration_provider,
                batch_size=16, device="cpu", predict=False)


def test_an_iteration_that_only_keeps_sizes_serves_as_one_under_the_reports() -> None:
    """The iteration before a sample's measured one runs with c10 keeping block sizes, not
    under the profiler's reports (whose every report was read back and dropped): the sample's
    peak is the same to the byte, and the flag is put back, also when the step raises."""
    import contextlib

    import skyline_nb.profiler.allocator_reports as reports

    flags = reports._c10_flags()
    assert flags is not None and not flags[0].value  # torch 2.13's libc10 has it
    warm = _warm("cnn", 8)
    kept = reports.sizes_kept

    @contextlib.contextmanager
    def refused():
        yield False

    peaks = {}
    for way in (kept, refused, kept):
        reports.sizes_kept = way
        try:
            peaks.setdefault(way, set()).add(warm.peak_at(16, categorize=False))
        finally:
            reports.sizes_kept = kept
    assert peaks[kept] == peaks[refused] and len(peaks[kept]) == 1
    assert not flags[0].value
    with pytest.raises(RuntimeError), kept() as on:
        assert on and flags[0].value
        raise RuntimeError("the step raised")
    assert not flags[0].value

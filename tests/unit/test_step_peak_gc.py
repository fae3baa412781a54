"""A measured window's peak does not depend on when Python's cyclic collector runs.

Garbage in reference cycles whose blocks were allocated while the CPU allocator reported (an
earlier profile's trial, a model of the user's) is freed whenever a collection happens; inside
a measured iteration those frees counted as the iteration's and lowered its peak (a
weight-normed model's sample: 546 KB instead of 627 KB in 5 of 10 profiles after a plain loop).
``step_peak.gc_paused`` holds the collector over every measured window; the threshold of 1
below makes a collection happen at the window's first allocation of a container otherwise.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import torch

from skyline_nb.examples import mlp
from skyline_nb.profiler.iteration import measure_level1
from skyline_nb.profiler.prepare import prepare
from skyline_nb.profiler.providers import InputsAtAnySize
from skyline_nb.profiler.session import build_trial
from skyline_nb.profiler.step_peak import allocator_events, measured_step

GARBAGE = 4 << 20


def _garbage_in_a_cycle() -> None:
    with allocator_events():  # allocated while reported: its free is reported too
        cycle: list = [torch.ones(GARBAGE, dtype=torch.uint8)]
    cycle.append(cycle)


@pytest.fixture
def collect_at_once() -> Iterator[None]:
    threshold = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.collect()


def test_a_collection_inside_the_window_does_not_lower_the_peak(collect_at_once) -> None:
    run = prepare(mlp.skyline_model_provider, mlp.skyline_input_provider,
                  mlp.skyline_iteration_provider, batch_size=16, device="cpu",
                  project_root=None, memory_budget=None, cells=None)
    inputs_for = InputsAtAnySize(run.providers, 16, run.device)
    _garbage_in_a_cycle()
    level1, warm = measure_level1(lambda: build_trial(run.providers, 16, run.device),
                                  run.device, 16, inputs_for=inputs_for)
    plain = measured_step(warm.trial, run.device, inputs_for(32)).added
    _garbage_in_a_cycle()
    again = measured_step(warm.trial, run.device, inputs_for(32)).added
    assert again == plain > 0
    _garbage_in_a_cycle()
    _, fresh = measure_level1(lambda: build_trial(run.providers, 16, run.device),
                              run.device, 16, inputs_for=inputs_for)
    assert fresh.user.peak_bytes == level1.peak_bytes


def test_gc_paused_restores_the_collector_as_it_found_it() -> None:
    from skyline_nb.profiler.step_peak import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # the user's choice stays
    finally:
        gc.enable()

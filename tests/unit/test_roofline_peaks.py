"""The roofline: the device's peaks are measured quickly and once, and a large matmul module,
which runs at the BLAS's best, lands near the top of what its arithmetic intensity allows."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from skyline_nb.profiler import roofline as rl
from skyline_nb.profiler.device import resolve_device
from skyline_nb.profiler.session import profile

pytestmark = pytest.mark.slow


def test_peaks_are_measured_within_half_a_second_and_kept(monkeypatch) -> None:
    device = resolve_device("cpu")
    # The measuring thread's own CPU time: the loops are bounded by BUDGET_S of wall clock each,
    # and a core taken by another process meanwhile (seen: 0.5 s of wall exceeded beside a
    # browser) must not fail a bound on what the measurement itself costs. Quiet: 0.30–0.34 s.
    # The best of two: at two threads the measuring thread spins at OpenMP barriers while its
    # worker waits for a core, and that spinning is its CPU time too (0.5 s exceeded once in a
    # unit-suite run, 2026-11-25).
    costs = []
    for _ in range(2):
        monkeypatch.setattr(rl, "_measured", {})
        started = time.thread_time()
        roof = rl.roofline(device)
        costs.append(time.thread_time() - started)
    assert min(costs) <= 0.5, costs
    assert roof.peak_flops > 1e9 and roof.bandwidth > 1e8
    assert rl.roofline(device) is roof


def test_a_module_faster_than_the_measured_peak_raises_it_for_later_profiles(monkeypatch) -> None:
    """A peak measured while the cores were busy is too low; a module seen faster is evidence
    (over at least EVIDENCE_MS); the bandwidth stays as measured."""
    device = resolve_device("cpu")
    key = ("cpu", torch.get_num_threads())
    monkeypatch.setattr(rl, "_measured", {key: rl.Roofline(peak_flops=1e9, bandwidth=5e9)})
    # 4e8 FLOPs in 0.2 ms would be 2 TFLOP/s: too short to be evidence; 3e9 in 2 ms is 1.5e12.
    roof = rl.roofline(device, [(4e8, 0.2), (3e9, 2.0), (1e6, 5.0), (0, 3.0)])
    assert roof == rl.Roofline(peak_flops=1.5e12, bandwidth=5e9)
    assert rl.roofline(device) == roof  # kept
    assert rl.roofline(device, [(1e9, 10.0)]) == roof  # slower modules leave it


def test_peaks_measured_on_a_busy_machine_are_measured_again_and_the_best_kept(
        monkeypatch) -> None:
    """Beside a busy process of another session a kernel's first measurement read 38.4
    GFLOP/s where the machine does 315 quiet (BENCHMARKS.md, session 43): a measurement whose
    threads waited is not final; the next profiles measure again (up to TRIES in all), and a
    try never lowers a peak."""
    device = resolve_device("cpu")
    key = ("cpu", torch.get_num_threads())
    monkeypatch.setattr(rl, "_measured", {})
    monkeypatch.setattr(rl, "_busy_tries", {})
    tries: list[tuple[float, bool]] = []  # (rate, busy) the next measurements return

    def scripted(device, make):  # one try: the matmul's rate, then a tenth of it as the copy's
        rate, busy = tries[0] if make is rl._matmul else tries.pop(0)
        return (rate if make is rl._matmul else rate / 10), busy

    monkeypatch.setattr(rl, "_best_rate", scripted)
    tries[:] = [(38e9, True), (20e9, True), (315e9, False)]
    assert rl.roofline(device) == rl.Roofline(38e9, 3.8e9) and not rl.known(device)
    assert rl.measure(device) == rl.Roofline(38e9, 3.8e9) and not rl.known(device)  # kept
    assert rl.measure(device) == rl.Roofline(315e9, 31.5e9) and rl.known(device)  # quiet
    assert rl.roofline(device) == rl.Roofline(315e9, 31.5e9) and not tries  # no more tries
    # a machine busy at every try: measured TRIES times, then kept
    monkeypatch.setattr(rl, "_measured", {})
    tries[:] = [(1e9, True)] * rl.TRIES
    for _ in range(rl.TRIES):
        assert not rl.known(device)
        rl.measure(device)
    assert rl.known(device) and rl._measured[key] == rl.Roofline(1e9, 1e8) and not tries


def test_a_profile_beside_a_busy_process_measures_the_peaks_again_at_the_next(
        monkeypatch) -> None:
    """The session asks ``known`` before each profile: a busy first measurement is tried again
    at the next profile, in the profile's stage for it."""
    monkeypatch.setattr(rl, "_measured", {})
    monkeypatch.setattr(rl, "_busy_tries", {})
    seen: list[bool] = []
    real = rl._best_rate

    def busy_once(device, make):
        rate, _ = real(device, make)
        seen.append(make is rl._matmul)
        return rate, len(seen) <= 2  # the first measurement (matmul and copy) waited

    monkeypatch.setattr(rl, "_best_rate", busy_once)
    for _ in range(3):
        profile(*_linear_providers(64, 8), device="cpu", predict=False)
    assert seen == [True, False, True, False]  # measured at the first two profiles only
    assert rl.known(resolve_device("cpu"))


def _linear_providers(width: int, batch: int):
    """One Linear of ``width`` without bias, its input at ``batch``, SGD over its sum."""
    def model_provider():
        return nn.Sequential(nn.Linear(width, width, bias=False))

    def input_provider(batch_size=batch):
        return (torch.randn(batch_size, width),)

    def iteration_provider(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

        def iteration(x):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()

        return iteration

    return model_provider, input_provider, iteration_provider


def test_attainable_is_the_lower_roof() -> None:
    roof = rl.Roofline(peak_flops=100.0, bandwidth=10.0)
    assert rl.attainable(roof, flops=10.0, bytes_moved=10.0) == 10.0  # memory-bound
    assert rl.attainable(roof, flops=1e6, bytes_moved=1.0) == 100.0  # compute-bound
    assert rl.attainable(roof, flops=1.0, bytes_moved=0.0) == 100.0


def test_a_large_matmul_module_reaches_most_of_its_roof() -> None:
    report = profile(*_linear_providers(1024, 1024), device="cpu", predict=False)
    linear = report.tree.find("0")
    flops = linear.forward_flops + linear.backward_flops
    assert flops == 2 * 2 * 1024**3  # the forward and the weight-gradient matmuls
    achieved = flops / (linear.total_ms / 1e3)
    roof = rl.Roofline(report.device.peak_flops, report.device.bandwidth)
    share = achieved / rl.attainable(roof, flops, linear.flop_bytes_moved)
    # the peak is the best of short runs, so a busy machine can put the module slightly above
    assert 0.5 <= share <= 1.1, share

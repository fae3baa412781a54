"""The profiler on a real CUDA device: events, allocator peak, CUDA RNG isolation, OOM."""

from __future__ import annotations

import statistics
import time

import pytest
import torch
from unit.accumulating import accumulating_mlp, assert_gradients_by_module

from skyline_nb.examples import cnn, mlp, transformer
from skyline_nb.profiler import measure_iteration
from skyline_nb.profiler.errors import StartingBatchOOMError
from skyline_nb.profiler.session import profile

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def run(example, **kwargs):
    kwargs.setdefault("predict", False)
    return profile(
        example.skyline_model_provider,
        example.skyline_input_provider,
        example.skyline_iteration_provider,
        device="cuda",
        **kwargs,
    )


def test_cnn_report_on_cuda():
    rng = torch.cuda.get_rng_state()
    benchmark = torch.backends.cudnn.benchmark
    report = run(cnn, batch_size=32)
    assert torch.equal(rng, torch.cuda.get_rng_state())
    assert torch.backends.cudnn.benchmark == benchmark
    assert report.device.kind == "cuda" and report.device.capacity_bytes > 0
    assert report.iteration_ms > 0 and report.peak_bytes > report.categories["weights"]
    model = cnn.skyline_model_provider()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    # categories are what is alive at the peak: backward has made only some gradients there
    assert report.categories["weights"] == weights >= report.categories["grads"]
    for node in report.tree.walk():
        if node.children:
            assert node.forward_ms == pytest.approx(sum(c.forward_ms for c in node.children))
    conv = report.tree.find("blocks.2.conv2/convolution#0")
    assert conv is not None and conv.forward_ms > 0 and conv.backward_ms > 0
    assert report.tree.total_ms == pytest.approx(report.iteration_ms)


def test_the_capacity_is_the_room_this_kernel_has_not_the_total():
    """The drag's end on a GPU (``device.gpu_room_bytes``): tensors the user holds, and what
    other processes hold, are not room; the device's total was (sessions 11–48)."""
    total = torch.cuda.mem_get_info()[1]
    alone = run(mlp, batch_size=32).device.capacity_bytes
    held = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")  # a user's 1 GiB, alive
    beside = run(mlp, batch_size=32).device.capacity_bytes
    del held
    assert alone < total and abs((alone - beside) - (1 << 30)) <= 64 << 20


def test_transformer_backward_linked_on_cuda():
    report = run(transformer, batch_size=16)
    root = report.tree
    linked = sum(n.backward_ms or 0 for n in root.walk() if n.kind == "op" and n.forward_ms)
    assert linked / root.backward_ms > 0.9
    assert report.categories["activations"] > 0


def test_peak_grows_with_batch_and_predictions():
    small = measure_iteration(mlp.skyline_model_provider, mlp.skyline_input_provider,
                              mlp.skyline_iteration_provider, 64, "cuda")
    large = measure_iteration(mlp.skyline_model_provider, mlp.skyline_input_provider,
                              mlp.skyline_iteration_provider, 4096, "cuda")
    assert large.peak_bytes > small.peak_bytes
    report = run(mlp, batch_size=64, predict=True)
    assert len({s.batch_size for s in report.samples}) >= 3
    # a small MLP is launch-bound on a big GPU: time may be flat, memory must grow
    assert report.models is not None and report.models.memory.slope > 0


def test_oom_at_start_is_reported_and_memory_released():
    before = torch.cuda.memory_allocated()

    def huge_inputs(batch_size=1):
        return (torch.randn(batch_size, 1 << 28, device="cuda"),)

    def iteration_provider(model):
        def iteration(x):
            model(x).sum().backward()

        return iteration

    with pytest.raises(StartingBatchOOMError):
        profile(lambda: torch.nn.Identity(), huge_inputs, iteration_provider,
                batch_size=4096, device="cuda", predict=False)
    assert torch.cuda.memory_allocated() == before


def test_peaks_by_phase_on_cuda_predict_held_out_sizes():
    """Every sample's peak is split by phase on CUDA as on CPU (the caching allocator's peak
    read and reset where each phase starts), the phases' largest is the sample's peak, and the
    memory curve through them predicts fresh trials at sizes it never measured: mean within
    1 % (issue 15's bar), each within 2 % (H200: a fresh trial of the LSTM at 24 had 1.15 %
    more than the profile's curve, the allocator's history: 0.34–0.59 % mean in the
    benchmarks)."""
    from skyline_nb.examples import lstm

    report = run(lstm, batch_size=8, predict=True)
    phases = {"forward", "loss", "backward", "optimizer"}
    for sample in report.samples:
        assert set(sample.peak_by_phase) == phases, sample
        assert max(sample.peak_by_phase.values()) == sample.peak_bytes
    assert report.models is not None and report.models.memory is not None
    sampled = {s.batch_size for s in report.samples}
    errors = {}
    for n in sorted({12, 24, 48, 64} - sampled):
        truth = measure_iteration(lstm.skyline_model_provider, lstm.skyline_input_provider,
                                  lstm.skyline_iteration_provider, n, "cuda").peak_bytes
        errors[n] = 100 * (report.models.predict_peak_bytes(n) / truth - 1)
    assert errors and sum(map(abs, errors.values())) / len(errors) <= 1.0, errors
    assert max(map(abs, errors.values())) <= 2.0, errors
    assert report.models.peak_phase_at(64) in phases


def test_a_process_first_measurement_counts_no_library_workspace():
    """cuBLAS makes its workspaces at a process's first matmul and keeps them: they must count
    in no measurement, not in the first one only (H200: 69.6 MiB first, 4.6 MiB after)."""
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is None:
        pytest.skip("this torch cannot drop cuBLAS workspaces")
    torch.cuda.synchronize()
    clear()  # as in a fresh process
    first, again = (measure_iteration(mlp.skyline_model_provider, mlp.skyline_input_provider,
                                      mlp.skyline_iteration_provider, 32, "cuda").peak_bytes
                    for _ in range(2))
    assert first == again


def test_gradients_alive_at_the_peak_are_charged_to_their_modules_on_cuda():
    """Session 32's split of the gradients at the peak over the modules holding them, which
    CPU tests proved to the byte (storage keys of CUDA tensors are the device's pointers)."""
    report = profile(*accumulating_mlp(), batch_size=8, device="cuda", predict=False)
    assert_gradients_by_module(report)


def test_the_inputs_count_once_in_the_peak():
    """A user's loop holds one set of inputs: the profile's own second set at the user's batch
    (made for the reference step) must not be in the peak. Before, on an H100 and an H200,
    "other" equalled "inputs" in every model (0.67 % of the MLP's peak at 32, 7.45 % of a
    ConvNeXt-style model's)."""
    report = run(mlp, batch_size=256)
    inputs = report.categories["inputs"]
    assert inputs > 0
    assert abs(report.categories["untracked"]) < inputs / 2, report.categories
    plain = measure_iteration(mlp.skyline_model_provider, mlp.skyline_input_provider,
                              mlp.skyline_iteration_provider, 256, "cuda").peak_bytes
    assert abs(report.peak_bytes - plain) < inputs / 2, (report.peak_bytes, plain)


def test_a_step_that_keeps_its_outputs_is_named_with_their_bytes():
    """The allocator's counter between warm-up iterations: a step that keeps every
    iteration's outputs (256 × 10 floats, 10 KiB: a multiple of the allocator's 512-byte
    blocks) grows by exactly that per iteration; the example's own step keeps nothing."""
    assert not [w for w in run(mlp, batch_size=256).warnings if "more alive" in w]
    kept = []

    def iteration_provider(model):
        step = mlp.skyline_iteration_provider(model)

        def keeping(*args):
            value = step(*args)
            kept.append(model(args[0]).detach())
            return value

        return keeping

    report = profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                     iteration_provider, device="cuda", batch_size=256, predict=False)
    (said,) = [w for w in report.warnings if "more alive" in w]
    assert "keeps 10 KiB more" in said, said


@pytest.mark.xfail(strict=False, reason=(
    "session 18, four H100 hosts: the stock MLP's headline read +14 % and +6.6 % above the "
    "loop here, and +5.3 % and +3.6 % (medians per round, ranges -37 … +68 %) in "
    "benchmarks/cuda_launch_bound.py: the host's launch pace moves ±20-40 % between "
    "consecutive loops, more than the 5 % asked; level 1's event pair per step cost ~5-10 % "
    "before the stream was cached. Open in issue 15's note"))
def test_a_launch_bound_headline_is_what_a_loop_that_launches_ahead_runs_at():
    """The example MLP at 8 is launch-bound: the host's launches set its pace. A training loop
    launches the next iteration while the GPU finishes the last, so the headline must be that
    pace (session 16, an H100, the benchmark MLP at 8: 1.52 ms, the loop 1.54; before, timed
    in chunks of 1–2 iterations that each started on an empty queue: 1.64–2.07)."""

    def pipelined() -> float:
        model = mlp.skyline_model_provider().cuda()
        inputs = [t.cuda() for t in mlp.skyline_input_provider(batch_size=8)]
        step = mlp.skyline_iteration_provider(model)
        for _ in range(20):
            step(*inputs)
        torch.cuda.synchronize()
        began = time.perf_counter()
        for _ in range(100):
            step(*inputs)
        torch.cuda.synchronize()
        return 1000 * (time.perf_counter() - began) / 100

    pipelined()  # the GPU's clock ramps up (345 MHz before a process's first measurement)
    headlines, loops = [], []
    for _ in range(3):
        headlines.append(run(mlp, batch_size=8).iteration_ms)
        loops.append(pipelined())
    assert statistics.median(headlines) == pytest.approx(statistics.median(loops), rel=0.05)

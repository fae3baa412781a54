"""Peak memory per phase of the step: marks in the allocator's reports, and the memory model as
the largest of the phases' lines (profiler/phases.py, models/memory_curve.fit_memory)."""

from __future__ import annotations

import contextlib

import pytest

from skyline_nb.models.memory_curve import fit_memory
from skyline_nb.models.performance import PerformanceModels

MIB = 2**20


def _phases(n: int) -> dict[str, float]:
    """An LSTM-like step: backward holds the peak up to 8, forward (steeper) from 16 on."""
    return {"forward": 1e6 + 7.5e5 * n, "backward": 3e6 + 6e5 * n, "optimizer": 9e5 + 1e3 * n}


def test_a_phase_that_takes_over_beyond_the_samples_is_predicted_exactly() -> None:
    sizes = [4, 8, 16]
    phases = [_phases(n) for n in sizes]
    peaks = [max(p.values()) for p in phases]
    by_phase = fit_memory(sizes, peaks, phases)
    totals = fit_memory(sizes, peaks)
    for n in (24, 32, 64, 128):
        truth = max(_phases(n).values())
        assert by_phase(n) == pytest.approx(truth, rel=1e-12)
        assert totals(n) < 0.97 * truth  # the line through 8 and 16 has neither phase's slope
    for n, peak in zip(sizes, peaks, strict=True):  # exact where measured
        assert by_phase(n) == pytest.approx(peak, rel=1e-12)
    assert by_phase.inverse(by_phase(100)) == pytest.approx(100)
    # each line says whose peak it follows: backward leads at 8, forward from 16 on
    assert by_phase.line_at(8).phase == "backward" and by_phase.line_at(64).phase == "forward"
    assert totals.line_at(64).phase is None
    again = type(by_phase).from_dict(by_phase.to_dict())
    assert again.lines == by_phase.lines and again(64) == by_phase(64)


def test_phases_missing_at_any_size_fall_back_to_the_step_peaks() -> None:
    sizes = [4, 8, 16]
    peaks = [max(_phases(n).values()) for n in sizes]
    partial = [_phases(4), {}, _phases(16)]
    other = [_phases(4), {"forward": 1.0}, _phases(16)]
    for phases in (partial, other, None):
        assert fit_memory(sizes, peaks, phases).lines == fit_memory(sizes, peaks).lines


def test_a_phase_whose_peak_falls_holds_its_largest() -> None:
    sizes = [4, 8, 16]
    phases = [{"forward": 10.0 * n, "optimizer": 200.0 - n} for n in sizes]
    curve = fit_memory(sizes, [max(p.values()) for p in phases], phases)
    assert all(line.slope >= 0 for line in curve.lines)
    assert curve(1) == pytest.approx(196.0) and curve(64) == pytest.approx(640.0)


def test_a_peak_that_grows_with_the_square_of_the_batch_goes_on_as_its_parabola() -> None:
    """A B×B pairwise matrix: four samples on a parabola that bends up go on as its chords
    beyond the largest (a line read 22 / 37 / 66 % low at 1.5 / 2 / 4×), exact at the chords'
    ends and at or above it between them, also through the phases; the inverse agrees. A
    GPU's peak that steps between two samples lies on no parabola of four: it goes on as the
    line through the last two, as does a peak that is a line."""
    def square(n: float) -> float:
        return 2e5 + 3e3 * n + 256.0 * n * n

    sizes = [4, 16, 32, 64, 128]
    for curve in (fit_memory(sizes, [square(n) for n in sizes]),
                  fit_memory(sizes, [square(n) for n in sizes],
                             [{"forward": square(n), "optimizer": 1e5 + n} for n in sizes])):
        for n in (192, 256, 512, 1024):
            assert curve(n) == pytest.approx(square(n), rel=1e-9)
        for n in (160, 300, 700):
            assert square(n) <= curve(n) <= 1.1 * square(n)
        assert 0.98 * 700 <= curve.inverse(square(700)) <= 700  # chords: a little less fits
        assert all(curve(n) == pytest.approx(square(n), rel=1e-9) for n in sizes)
    stepped = [1e6 + 1e4 * n + (5e5 if n >= 64 else 0) for n in sizes]
    for peaks in (stepped, [1e6 + 1e4 * n for n in sizes]):
        curve = fit_memory(sizes, peaks)
        assert curve(512) == pytest.approx(peaks[-1] + (512 - 128) * (peaks[-1] - peaks[-2]) / 64)


def test_performance_models_take_the_phases_and_keep_them_aligned_with_valid_samples() -> None:
    sizes = [4, 8, 16, 0]  # batch 0 is no measurement: dropped with its phases
    phases = [_phases(n) for n in sizes]
    models = PerformanceModels.from_samples(
        sizes, [4.0, 8.0, 16.0, 1.0], [max(p.values()) for p in phases], 0,
        peak_phases=phases)
    assert models.predict_peak_bytes(64) == pytest.approx(max(_phases(64).values()))
    assert [models.peak_phase_at(n) for n in (4, 64)] == ["backward", "forward"]
    assert [models.peak_phases_at(n) for n in (4, 64)] == [["backward"], ["forward"]]
    with pytest.raises(ValueError, match="differ in length"):
        PerformanceModels.from_samples(sizes, [1.0] * 4, [1] * 4, 0, peak_phases=phases[:2])


def test_allocator_reports_split_at_labelled_markers() -> None:
    reports_module = pytest.importorskip("skyline_nb.profiler.allocator_reports")
    reports = reports_module.AllocatorReports()
    # 4093 starts the iteration; 11 and 13 are phase markers (their bytes count nowhere)
    reports.events = [(0, 500), (1, 4093), (2, -4093), (3, 100), (4, 11), (5, -11), (6, 300),
                      (7, 13), (8, -13), (9, -250), (10, 40), (11, -190)]
    peaks = reports.peaks(after_bytes=4093, labels={11: "b", 13: "c"}, first="a")
    assert peaks == {"a": 100, "b": 400, "c": 400}  # a phase starts where the last one ended
    assert reports.peak(after_bytes=4093, labels={11: "b", 13: "c"}) == 400
    assert reports.peak(after_bytes=4093) == 400 + 13  # unlabelled, a marker is bytes


torch = pytest.importorskip("torch")


def _trial_parts():
    from skyline_nb.profiler.device import resolve_device
    from skyline_nb.profiler.providers import Trial

    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = {"x": torch.randn(32, 64)}

    def step() -> float:
        optimizer.zero_grad()
        loss = model(data["x"]).square().mean()
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    trial = Trial(model, step, (), {}, [], "test")
    return resolve_device("cpu", None), trial, model, data


def test_phase_marks_split_a_real_step_and_leave_no_hook_behind() -> None:
    from skyline_nb.profiler.phases import FIRST, LABELS, PhaseMarks
    from skyline_nb.profiler.step_peak import allocator_events, mark

    device, trial, model, data = _trial_parts()
    inputs = ((), {}, [])
    for _ in range(2):
        trial.step()
    measured = []
    for marked in (True, False, True):
        with allocator_events() as allocator:
            trial.step()
            trial.use_inputs(inputs)
            mark()
            with PhaseMarks(model) if marked else contextlib.nullcontext():
                trial.step()
        measured.append(allocator)
    by_phase = measured[0].peaks(after_bytes=4093, labels=LABELS, first=FIRST)
    assert set(by_phase) == {"forward", "loss", "backward", "optimizer"}
    plain = measured[1].peak(after_bytes=4093)
    assert max(by_phase.values()) == plain  # the same step's peak, the markers left out
    # zero_grad frees the last step's gradients before the activations outgrow them; backward
    # makes them again and holds the peak
    assert by_phase["backward"] == plain > by_phase["forward"] >= 0
    assert measured[2].peaks(after_bytes=4093, labels=LABELS, first=FIRST) == by_phase
    assert not model._forward_pre_hooks and not model._forward_hooks
    torch.optim.SGD(model.parameters(), lr=0.1).step()  # no global optimizer hook marks it
    assert device.kind == "cpu" and data["x"].shape == (32, 64)


@pytest.mark.slow
def test_the_example_lstm_from_8_predicts_its_peak_at_32_and_64() -> None:
    """The LSTM peaks in backward at 8 and in forward from 16 on: from samples at 4, 8 and 16,
    the phases' lines predict 32 and 64 to the byte's 0.1 %; the step's peaks alone did not."""
    from skyline_nb.examples import lstm
    from skyline_nb.profiler.iteration import measure_level1
    from skyline_nb.profiler.prepare import prepare
    from skyline_nb.profiler.providers import InputsAtAnySize
    from skyline_nb.profiler.session import build_trial

    run = prepare(lstm.skyline_model_provider, lstm.skyline_input_provider,
                  lstm.skyline_iteration_provider, batch_size=8, device="cpu",
                  project_root=None, memory_budget=None, cells=None)
    level1, warm = measure_level1(lambda: build_trial(run.providers, 8, run.device), run.device,
                                  8, inputs_for=InputsAtAnySize(run.providers, 8, run.device))
    sizes = [4, 8, 16]
    peaks = {8: level1.peak_bytes, **{n: warm.peak_at(n) for n in (4, 16)}}
    truth = {n: warm.peak_at(n) for n in (32, 64)}
    phases = [{**warm.phases_at, 8: warm.user_phases}[n] for n in sizes]
    assert all(max(p.values()) == peaks[n] for n, p in zip(sizes, phases, strict=True))
    by_phase = fit_memory(sizes, [peaks[n] for n in sizes], phases)
    totals = fit_memory(sizes, [peaks[n] for n in sizes])
    for n, peak in truth.items():
        assert by_phase(n) == pytest.approx(peak, rel=1e-3)
        assert totals(n) < 0.98 * peak


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_a_model_that_takes_no_hooks_is_one_phase_until_its_optimizer_steps() -> None:
    from skyline_nb.profiler.phases import FIRST, LABELS, PhaseMarks
    from skyline_nb.profiler.step_peak import allocator_events, mark

    model = torch.jit.script(torch.nn.Linear(16, 16))
    optimizer = torch.optim.SGD(list(model.parameters()), lr=0.1)
    x = torch.randn(8, 16)
    with allocator_events() as allocator:
        mark()
        with PhaseMarks(model):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
    assert set(allocator.peaks(after_bytes=4093, labels=LABELS, first=FIRST)) == {
        "forward", "optimizer"}


def test_phase_marks_call_a_given_mark_in_the_steps_order() -> None:
    """The callback CUDA uses (``CudaPhasePeaks.mark``) sees the four phases in order, once
    each for a one-output model, and nothing after the block."""
    from skyline_nb.profiler.phases import PhaseMarks

    _device, trial, model, _data = _trial_parts()
    seen: list[str] = []
    with PhaseMarks(model, seen.append):
        trial.step()
    assert seen == ["forward", "loss", "backward", "optimizer"]
    trial.step()
    assert len(seen) == 4


def test_what_follows_the_backward_pass_is_the_update_without_an_optimizer_too() -> None:
    """An update written by hand (``p -= lr * p.grad``) has no step hook to mark it: it was
    "the model's backward", and so was its peak. The backward pass's end marks it."""
    from skyline_nb.profiler.phases import PhaseMarks

    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    seen: list[str] = []
    with PhaseMarks(model, seen.append):
        model(torch.ones(2, 4)).sum().backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= 0.1 * param.grad
    assert seen == ["forward", "loss", "backward", "optimizer"]


class _ScriptedCudaAllocator:
    """The CUDA caching allocator's books as ``CudaPhasePeaks`` reads them: bytes allocated,
    and a peak that ``reset_peak`` sets back to what is allocated now."""

    def __init__(self, allocated: int) -> None:
        self.allocated = self.peak = allocated

    def add(self, nbytes: int) -> None:
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)

    def max_memory_allocated(self) -> int:
        return self.peak

    def reset_peak(self) -> None:
        self.peak = self.allocated


def test_cuda_phase_peaks_are_each_phases_high_water_mark_above_the_steps_start() -> None:
    from skyline_nb.profiler.phases import CudaPhasePeaks

    books = _ScriptedCudaAllocator(1000)
    phases = CudaPhasePeaks(books, before=1000)
    books.add(-50)  # zero_grad frees gradients before the model's forward: forward's part
    phases.mark("forward")
    books.add(400)
    books.add(-100)
    phases.mark("loss")
    books.add(80)
    books.add(-80)
    phases.mark("backward")
    books.add(300)  # 550 above the start: the step's peak
    books.add(-400)
    phases.mark("backward")  # a second output reached: the phase keeps its larger peak
    books.add(10)
    phases.mark("optimizer")
    books.add(120)
    assert phases.close() == {"forward": 400 - 50, "loss": 330, "backward": 550,
                              "optimizer": 160 + 120}


def test_phases_whose_peaks_lie_within_the_tie_are_named_together() -> None:
    """A BERT's forward and backward peaks grew 313,096 and 312,852 B a sample: every sample
    peaked in backward, and the forward's line crosses above near 490 by a hair. Beyond the
    samples both are named, the curve's own line first; where one leads by more, it alone."""
    sizes = [16, 32, 64]
    phases = [{"forward": 1_080_000 + 313_096 * n, "backward": 1_200_000 + 312_852 * n,
               "optimizer": 500_000 + 10 * n} for n in sizes]
    models = PerformanceModels.from_samples(sizes, [5.0, 9.0, 17.0],
                                            [max(p.values()) for p in phases], 0,
                                            peak_phases=phases)
    assert models.peak_phase_at(512) == "forward"
    assert models.peak_phases_at(512) == ["forward", "backward"]
    assert models.peak_phases_at(16) == ["backward"]  # 1.9 % above the forward's
    assert models.peak_phases_at(512, share=1e-5) == ["forward"]  # 0.003 % apart

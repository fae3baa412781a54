"""Steps written by users and by others, profiled on a real CUDA device: the ends of the drag
range where the user's code fails (batch norm over one sample, a small dataset's rows), and
Hugging Face models built from small configs (``tests/unit/hf_models.py``), whose peaks must
be the allocator's to the byte at every sample and predicted within issue 15's 1 % elsewhere.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn
from unit.test_profiler_errors import iteration_provider

from skyline_nb.profiler.prepare import measure_iteration
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
ROWS = 24
X, Y = torch.randn(ROWS, 8), torch.randint(0, 2, (ROWS,))


def with_batch_norm() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 2))


def sliced(batch_size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """A newcomer's provider over a small dataset: 24 rows at most, on the CPU."""
    return X[:batch_size], Y[:batch_size]


def test_the_drag_range_ends_where_the_users_code_fails_on_cuda() -> None:
    """Batch 1 (batch norm over one sample raises) and the dataset's rows bound the drag, as
    on the CPU (``test_refused_size.py`` drags the same step in a browser)."""
    report = profile(with_batch_norm, sliced, iteration_provider, batch_size=8, device="cuda")
    models = report.models  # (a step this small may be too noisy to drag: not asked here)
    assert models is not None
    assert models.fails_below == 1 and models.min_batch_size() == 2, report.warnings
    assert ROWS <= models.max_batch_size() <= ROWS + 1, (models.fails_at, report.warnings)
    assert any("Expected more than 1 value per channel" in w for w in report.warnings)
    assert impossible_values(report) == []


HF = ["bert", "gpt2", "llama", "mixtral", "opt", "t5", "vit", "whisper"]


@functools.cache
def profiled(name: str):
    """The providers of a Hugging Face model and its profile at 8 (one per model)."""
    pytest.importorskip("transformers")
    from unit import hf_models

    provs = hf_models.ALL[name]()
    return provs, profile(*provs, batch_size=8, device="cuda")


@pytest.mark.parametrize("name", HF)
def test_a_transformers_model_on_cuda_measures_and_predicts_its_peak(name: str) -> None:
    provs, report = profiled(name)
    assert impossible_values(report) == []
    assert report.models is not None and report.models.memory is not None
    for sample in report.samples:  # the user's batch too: the headline's peak
        fresh = measure_iteration(*provs, sample.batch_size, "cuda").peak_bytes
        assert sample.peak_bytes == fresh, (sample.batch_size, sample.peak_bytes, fresh)
    sampled = {s.batch_size for s in report.samples}
    errors = {}
    for batch in sorted({20, 40, 80} - sampled):
        truth = measure_iteration(*provs, batch, "cuda").peak_bytes
        errors[batch] = 100 * (report.models.predict_peak_bytes(batch) / truth - 1)
    assert sum(map(abs, errors.values())) / len(errors) <= 1.0, errors


REFUSED = pytest.mark.xfail(strict=False, reason=(
    "session 23, one H100, one profile each: dragging off, 'the measured times are too "
    "scattered around the fitted curve' (R² 0.75 for Mixtral's ~14 ms step over 4…512, 0.94 "
    "for OPT's ~7.6 ms over 4…256): launch-bound steps whose host pace moves; the samples' "
    "times were not kept. Session 26, one H100: both kept the drag in 2 of 2 runs, and BERT's "
    "was refused in 2 of 3 profiles (R² 0.51, its user's batch 18 % below the rest): the "
    "same class, whichever model. Open in issue 15's note"))


@pytest.mark.parametrize("name", [n if n not in ("mixtral", "opt") else
                                  pytest.param(n, marks=REFUSED) for n in HF])
def test_a_transformers_model_on_cuda_keeps_the_drag(name: str) -> None:
    """Issue 15: no refusal for a launch-bound (flat) time; the predicted maximum throughput
    never below a measured one."""
    _, report = profiled(name)
    models = report.models
    samples = ", ".join(f"{s.batch_size}: {s.iteration_ms:.2f} ms" for s in report.samples)
    # a string, which pytest prints whole (a tuple's repr is cut short)
    assert models is not None and models.can_manipulate, (
        f"{models and models.reason}; samples {samples}")
    assert models.max_throughput >= models.measured_max_throughput

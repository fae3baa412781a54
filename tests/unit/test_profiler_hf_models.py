"""Hugging Face architectures (``hf_models.py``: Llama, OPT, BERT, T5, ViT from small configs)
profiled as a user profiles them: the step's peak and the samples' peaks exact to the byte
against a plain iteration of a fresh model, every invariant of a report, the time spread over
the model's own top-level modules, the loss computed in the model's code, backward and the
optimizer all found.

Seen when these were first profiled (session 17): all five ran, with 0 impossible values and
dragging on; their untracked time is 0–25 % of the step (Llama 3.6 of 14.3 ms: the Python of
its masks, rotary tables and loss between ops), which is what it is, not an error.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import hf_models

from skyline_nb.profiler.prepare import measure_iteration
from skyline_nb.profiler.session import profile
from skyline_nb.report import NodeKind
from skyline_nb.report_checks import impossible_values

BATCH = 8


@pytest.mark.slow  # ~2 s a model: five profiles with their samples, and fresh plain peaks
@pytest.mark.parametrize("name", sorted(hf_models.ALL))
def test_a_hugging_face_model_is_profiled_exactly(name: str) -> None:
    providers = hf_models.ALL[name]()
    report = profile(*providers, batch_size=BATCH, device="cpu")
    assert impossible_values(report) == [], report.warnings
    assert sum(report.categories.values()) == report.peak_bytes
    assert report.peak_bytes == measure_iteration(*providers, BATCH, "cpu").peak_bytes
    for sample in report.samples:
        fresh = measure_iteration(*providers, sample.batch_size, "cpu").peak_bytes
        assert sample.peak_bytes == fresh, (sample.batch_size, sample.peak_bytes, fresh)
    model = providers[0]()
    top = {child.path for child in report.tree.children}
    assert {path for path, _ in model.named_children()} <= top, top
    assert report.tree.forward_ms > 0 and report.tree.backward_ms > 0
    assert NodeKind.OPTIMIZER in {child.kind for child in report.tree.children}, top

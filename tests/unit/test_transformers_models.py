"""Models written by someone else: Hugging Face ``transformers`` BERT, GPT-2, Llama, Mixtral (a
mixture of experts), OPT, T5, ViT and Whisper (``hf_models.py``), built from small configs (no
download), profiled at the default torch threads as a user would.

``transformers`` is a test extra (``pip install -e .[dev]``), never a runtime dependency. These
models return a ``ModelOutput`` (an ordered dict) holding the loss, build masks and position
ids inside forward, tie weights (GPT-2) and use AdamW: the report must still hold no impossible
value, keep one node per module instance with every top-level module and the optimizer found,
mark every phase of the step, measure the peak at the batch and at every sample to the byte
(against a plain iteration of a fresh model), and predict it elsewhere to the byte's 0.5 %.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # real profiles: a few seconds each on a 2-core machine

import hf_models  # noqa: E402

import skyline_nb  # noqa: E402
from skyline_nb.profiler.prepare import measure_iteration  # noqa: E402
from skyline_nb.report import NodeKind  # noqa: E402
from skyline_nb.report_checks import impossible_values  # noqa: E402

USER_THREADS = True  # torch's own thread count, as users run (conftest.py)
BATCH = 8


@pytest.mark.parametrize(("name", "layer"), [
    ("bert", "bert.encoder.layer.1"),
    ("gpt2", "transformer.h.1"),
    ("llama", "model.layers.1"),
    ("mixtral", "model.layers.1"),
    ("opt", "model.decoder.layers.1"),
    ("t5", "encoder.block.1"),
    ("vit", "vit.layers.1"),
    ("whisper", "model.encoder.layers.1"),
])
def test_a_transformers_model_profiles_without_impossible_values(name, layer) -> None:
    provs = hf_models.ALL[name]()
    report = skyline_nb.profile(*provs, batch_size=BATCH, device="cpu")
    assert impossible_values(report) == []
    paths = {node.path for node in report.tree.walk()}
    assert layer in paths and layer.replace(".1", ".0") in paths  # one node per instance
    top = {child.path for child in report.tree.children}
    assert {path for path, _ in provs[0]().named_children()} <= top, top
    assert NodeKind.OPTIMIZER in {child.kind for child in report.tree.children}
    assert all(set(s.peak_by_phase) == {"forward", "loss", "backward", "optimizer"}
               for s in report.samples)
    for sample in report.samples:  # the user's batch too: the headline's peak
        fresh = measure_iteration(*provs, sample.batch_size, "cpu").peak_bytes
        assert sample.peak_bytes == fresh, (sample.batch_size, sample.peak_bytes, fresh)
    assert report.models is not None and report.models.memory is not None
    for batch in (24, 32):
        truth = measure_iteration(*provs, batch, "cpu").peak_bytes
        assert report.models.predict_peak_bytes(batch) == pytest.approx(truth, rel=5e-3)

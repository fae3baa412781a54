"""Models written by someone else: Hugging Face ``transformers`` BERT, GPT-2, Llama, Mixtral (a
mixture of experts), T5 and ViT, built from small configs (no download), profiled at the default
torch threads as a user would.

``transformers`` is a test extra (``pip install -e .[dev]``), never a runtime dependency. These
models return a ``ModelOutput`` (an ordered dict) holding the loss, build masks and position
ids inside forward, tie weights (GPT-2) and use AdamW: the report must still hold no impossible
value, keep one node per module instance, mark every phase of the step, and predict the peak
at other batch sizes to the byte's 0.5 %.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # real profiles: a few seconds each on a 2-core machine

import skyline_nb  # noqa: E402
from skyline_nb.profiler.prepare import measure_iteration  # noqa: E402
from skyline_nb.report_checks import impossible_values  # noqa: E402

VOCAB, LENGTH = 1000, 32
USER_THREADS = True  # torch's own thread count, as users run (conftest.py)


def _iteration(with_labels):
    def iteration_provider(model):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(*inputs):
            optimizer.zero_grad()
            loss = model(**with_labels(*inputs)).loss
            loss.backward()
            optimizer.step()
            return loss.detach()

        return step

    return iteration_provider


def bert_providers():
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=LENGTH, num_labels=3)

    def model_provider():
        return transformers.BertForSequenceClassification(config)

    def input_provider(batch_size=8):
        generator = torch.Generator().manual_seed(0)
        return (torch.randint(0, VOCAB, (batch_size, LENGTH), generator=generator),
                torch.randint(0, 3, (batch_size,), generator=generator))

    return model_provider, input_provider, _iteration(
        lambda ids, labels: {"input_ids": ids, "labels": labels})


def gpt2_providers():
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=64, n_layer=2,
                                     n_head=4, bos_token_id=0, eos_token_id=0)

    def model_provider():
        return transformers.GPT2LMHeadModel(config)

    def input_provider(batch_size=8):
        generator = torch.Generator().manual_seed(0)
        return (torch.randint(0, VOCAB, (batch_size, LENGTH), generator=generator),)

    return model_provider, input_provider, _iteration(
        lambda ids: {"input_ids": ids, "labels": ids})


def _causal_lm(config_class, model_class, **config):
    config = config_class(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=LENGTH, **config)

    def input_provider(batch_size=8):
        generator = torch.Generator().manual_seed(0)
        return (torch.randint(0, VOCAB, (batch_size, LENGTH), generator=generator),)

    return lambda: model_class(config), input_provider, _iteration(
        lambda ids: {"input_ids": ids, "labels": ids})


def llama_providers():  # grouped-query attention, rotary embeddings, RMSNorm, SwiGLU
    return _causal_lm(transformers.LlamaConfig, transformers.LlamaForCausalLM)


def mixtral_providers():  # a mixture of experts: each token routed to 2 of 4 experts
    return _causal_lm(transformers.MixtralConfig, transformers.MixtralForCausalLM,
                      num_local_experts=4, num_experts_per_tok=2)


def t5_providers():  # an encoder-decoder with relative position buckets
    config = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                                   num_layers=2, num_heads=4, decoder_start_token_id=0)

    def input_provider(batch_size=8):
        generator = torch.Generator().manual_seed(0)
        return (torch.randint(0, VOCAB, (batch_size, LENGTH), generator=generator),
                torch.randint(0, VOCAB, (batch_size, LENGTH // 2), generator=generator))

    return lambda: transformers.T5ForConditionalGeneration(config), input_provider, _iteration(
        lambda ids, labels: {"input_ids": ids, "labels": labels})


def vit_providers():  # patches from a convolution, images in, labels in
    config = transformers.ViTConfig(image_size=32, patch_size=4, hidden_size=64,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=128, num_labels=10)

    def input_provider(batch_size=8):
        generator = torch.Generator().manual_seed(0)
        return (torch.randn(batch_size, 3, 32, 32, generator=generator),
                torch.randint(0, 10, (batch_size,), generator=generator))

    return lambda: transformers.ViTForImageClassification(config), input_provider, _iteration(
        lambda pixels, labels: {"pixel_values": pixels, "labels": labels})


@pytest.mark.parametrize(("providers", "layer"), [
    (bert_providers, "bert.encoder.layer.1"),
    (gpt2_providers, "transformer.h.1"),
    (llama_providers, "model.layers.1"),
    (mixtral_providers, "model.layers.1"),
    (t5_providers, "encoder.block.1"),
    (vit_providers, "vit.layers.1"),
], ids=["bert", "gpt2", "llama", "mixtral", "t5", "vit"])
def test_a_transformers_model_profiles_without_impossible_values(providers, layer) -> None:
    provs = providers()
    report = skyline_nb.profile(*provs, batch_size=8, device="cpu")
    assert impossible_values(report) == []
    paths = {node.path for node in report.tree.walk()}
    assert layer in paths and layer.replace(".1", ".0") in paths  # one node per instance
    assert all(set(s.peak_by_phase) == {"forward", "loss", "backward", "optimizer"}
               for s in report.samples)
    assert report.models is not None and report.models.memory is not None
    for batch in (24, 32):
        truth = measure_iteration(*provs, batch, "cpu").peak_bytes
        assert report.models.predict_peak_bytes(batch) == pytest.approx(truth, rel=5e-3)

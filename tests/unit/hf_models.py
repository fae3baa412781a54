"""Models written by someone else: Hugging Face ``transformers`` BERT, GPT-2, Llama, Mixtral (a
mixture of experts), OPT, T5, ViT and Whisper built from small configs (nothing downloaded),
with the training step their model cards write (AdamW, the loss the model computes from its
labels).

Shared by ``test_transformers_models.py`` and ``benchmarks/user_steps.py --hf``. What they bring
that our examples do not: a ``ModelOutput`` (an ordered dict) holding the loss, masks and
position ids built inside forward, tied weights (GPT-2), rotary embeddings and grouped-query
attention (Llama, Mixtral), experts chosen per token (Mixtral), learned positions and a
projection (OPT), relative position buckets in an encoder-decoder (T5), patches from a
convolution (ViT), log-mel frames through two convolutions into an encoder-decoder of ~1,300
small ops a step (Whisper); and Python work between ops, which a profile counts as untracked
time. ``transformers`` is a test extra, never a runtime dependency: import this only where it
is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import transformers

Providers = tuple[Callable[[], Any], Callable[..., tuple], Callable[[Any], Callable[..., Any]]]
VOCAB, LENGTH = 1000, 32


def _iteration(with_labels: Callable[..., dict[str, Any]]) -> Callable[[Any], Callable[..., Any]]:
    def iteration_provider(model: Any) -> Callable[..., Any]:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(*inputs: torch.Tensor) -> torch.Tensor:
            optimizer.zero_grad()
            loss = model(**with_labels(*inputs)).loss
            loss.backward()
            optimizer.step()
            return loss.detach()

        return step

    return iteration_provider


def _token_inputs(*shapes: tuple[int, int]) -> Callable[..., tuple]:
    """An input provider at any batch: per (high, length), integers below ``high`` of shape
    (batch, length), or (batch,) where ``length`` is 0 (class labels)."""

    def input_provider(batch_size: int = 8) -> tuple:
        generator = torch.Generator().manual_seed(0)
        return tuple(torch.randint(0, high, (batch_size, length) if length else (batch_size,),
                                   generator=generator) for high, length in shapes)

    return input_provider


def bert() -> Providers:
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=LENGTH, num_labels=3)
    return (lambda: transformers.BertForSequenceClassification(config),
            _token_inputs((VOCAB, LENGTH), (3, 0)),
            _iteration(lambda ids, labels: {"input_ids": ids, "labels": labels}))


def gpt2() -> Providers:
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=64, n_layer=2,
                                     n_head=4, bos_token_id=0, eos_token_id=0)
    return (lambda: transformers.GPT2LMHeadModel(config), _token_inputs((VOCAB, LENGTH)),
            _iteration(lambda ids: {"input_ids": ids, "labels": ids}))


def _causal_lm(config_class: Any, model_class: Any, **config: Any) -> Providers:
    built = config_class(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=LENGTH, **config)
    return (lambda: model_class(built), _token_inputs((VOCAB, LENGTH)),
            _iteration(lambda ids: {"input_ids": ids, "labels": ids}))


def llama() -> Providers:  # grouped-query attention, rotary embeddings, RMSNorm, SwiGLU
    return _causal_lm(transformers.LlamaConfig, transformers.LlamaForCausalLM)


def mixtral() -> Providers:  # a mixture of experts: each token routed to 2 of 4 experts
    return _causal_lm(transformers.MixtralConfig, transformers.MixtralForCausalLM,
                      num_local_experts=4, num_experts_per_tok=2)


def opt() -> Providers:  # a decoder with learned positions
    config = transformers.OPTConfig(vocab_size=VOCAB, hidden_size=64, ffn_dim=128,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    max_position_embeddings=LENGTH, word_embed_proj_dim=64)
    return (lambda: transformers.OPTForCausalLM(config), _token_inputs((VOCAB, LENGTH)),
            _iteration(lambda ids: {"input_ids": ids, "labels": ids}))


def t5() -> Providers:  # an encoder-decoder with relative position buckets
    config = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                                   num_layers=2, num_heads=4, decoder_start_token_id=0)
    return (lambda: transformers.T5ForConditionalGeneration(config),
            _token_inputs((VOCAB, LENGTH), (VOCAB, LENGTH // 2)),
            _iteration(lambda ids, labels: {"input_ids": ids, "labels": labels}))


def vit() -> Providers:  # patches from a convolution, images in, labels in
    config = transformers.ViTConfig(image_size=32, patch_size=4, hidden_size=64,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=128, num_labels=10)

    def input_provider(batch_size: int = 8) -> tuple:
        generator = torch.Generator().manual_seed(0)
        return (torch.randn(batch_size, 3, 32, 32, generator=generator),
                torch.randint(0, 10, (batch_size,), generator=generator))

    return (lambda: transformers.ViTForImageClassification(config), input_provider,
            _iteration(lambda pixels, labels: {"pixel_values": pixels, "labels": labels}))


def whisper() -> Providers:  # speech: log-mel frames through convolutions, then an encoder-decoder
    config = transformers.WhisperConfig(
        vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=50,
        max_target_positions=LENGTH, decoder_start_token_id=1, pad_token_id=0,
        bos_token_id=1, eos_token_id=2)

    def input_provider(batch_size: int = 8) -> tuple:
        generator = torch.Generator().manual_seed(0)
        return (torch.randn(batch_size, 16, 100, generator=generator),
                torch.randint(3, VOCAB, (batch_size, 12), generator=generator))

    return (lambda: transformers.WhisperForConditionalGeneration(config), input_provider,
            _iteration(lambda frames, labels: {"input_features": frames, "labels": labels}))


ALL: dict[str, Callable[[], Providers]] = {
    f.__name__: f for f in (bert, gpt2, llama, mixtral, opt, t5, vit, whisper)
}

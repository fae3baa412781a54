"""Models written by someone else: Hugging Face ``transformers`` architectures built from small
configs (nothing downloaded), with training steps as their model cards write them.

Each entry returns the three providers. What they bring that our examples do not: rotary
embeddings and grouped-query attention through SDPA (Llama), an encoder-decoder with relative
position buckets and a loss over shifted labels (T5), a patch-embedding convolution and a
classification head over the first token (ViT), token-type embeddings and a pooler (BERT), a
learned-position decoder with a projection (OPT); Python work between ops in each (masks,
position ids, the loss function), which the profile counts as untracked time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Providers = tuple[Callable[[], Any], Callable[..., tuple], Callable[[Any], Callable[..., Any]]]
VOCAB, SEQ = 500, 32


def _adamw_step(model: Any, loss_of: Callable[..., torch.Tensor]) -> Callable[..., None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def iteration(*inputs: torch.Tensor) -> None:
        optimizer.zero_grad()
        loss_of(*inputs).backward()
        optimizer.step()

    return iteration


def _causal_lm(cls_name: str, config: Any) -> Providers:
    import transformers

    def model() -> Any:
        return getattr(transformers, cls_name)(config)

    def inputs(batch_size: int = 8) -> tuple:
        return (torch.randint(0, VOCAB, (batch_size, SEQ)),)

    def iteration_of(net: Any) -> Callable[..., None]:
        return _adamw_step(net, lambda ids: net(input_ids=ids, labels=ids).loss)

    return model, inputs, iteration_of


def llama() -> Providers:
    """Llama: RMSNorm, rotary embeddings, grouped-query attention (4 heads, 2 key/value)."""
    import transformers

    return _causal_lm("LlamaForCausalLM", transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64))


def opt() -> Providers:
    """OPT: a decoder with learned positions."""
    import transformers

    return _causal_lm("OPTForCausalLM", transformers.OPTConfig(
        vocab_size=VOCAB, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64, word_embed_proj_dim=64))


def bert_classifier() -> Providers:
    """BERT fine-tuned for sequence classification: ids and labels in, the pooler's head."""
    import transformers

    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128, num_labels=2)

    def model() -> Any:
        return transformers.BertForSequenceClassification(config)

    def inputs(batch_size: int = 8) -> tuple:
        return torch.randint(0, VOCAB, (batch_size, SEQ)), torch.randint(0, 2, (batch_size,))

    def iteration_of(net: Any) -> Callable[..., None]:
        return _adamw_step(net, lambda ids, y: net(input_ids=ids, labels=y).loss)

    return model, inputs, iteration_of


def t5() -> Providers:
    """T5: encoder and decoder, relative position buckets, labels shifted into the decoder."""
    import transformers

    config = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                                   num_layers=2, num_heads=4, decoder_start_token_id=0)

    def model() -> Any:
        return transformers.T5ForConditionalGeneration(config)

    def inputs(batch_size: int = 8) -> tuple:
        return (torch.randint(0, VOCAB, (batch_size, SEQ)),
                torch.randint(0, VOCAB, (batch_size, SEQ // 2)))

    def iteration_of(net: Any) -> Callable[..., None]:
        return _adamw_step(net, lambda ids, y: net(input_ids=ids, labels=y).loss)

    return model, inputs, iteration_of


def vit() -> Providers:
    """ViT: 8×8 patches of 32×32 images, SGD with momentum."""
    import transformers

    config = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=128, num_labels=10)

    def model() -> Any:
        return transformers.ViTForImageClassification(config)

    def inputs(batch_size: int = 8) -> tuple:
        return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))

    def iteration_of(net: Any) -> Callable[..., None]:
        optimizer = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9)

        def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
            optimizer.zero_grad()
            net(pixel_values=x, labels=y).loss.backward()
            optimizer.step()

        return iteration

    return model, inputs, iteration_of


ALL: dict[str, Callable[[], Providers]] = {
    f.__name__: f for f in (llama, opt, bert_classifier, t5, vit)
}

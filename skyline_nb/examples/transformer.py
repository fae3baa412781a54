"""A 2-layer Transformer encoder language model, written out by hand.

Hand-written attention (rather than ``nn.TransformerEncoderLayer``) so the profile links the
attention's matmuls and softmax to lines a user can read and change.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 1000
SEQ_LEN = 32


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = F.softmax(scores, dim=-1)
        context = (weights @ v).transpose(1, 2).reshape(batch, seq, dim)
        return self.out(context)


class EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.attention = SelfAttention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.norm2 = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.dropout(self.attention(x)))
        return self.norm2(x + self.dropout(self.ff(x)))


class TransformerLM(nn.Module):
    def __init__(self, dim: int = 128, heads: int = 4, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.position = nn.Parameter(torch.zeros(SEQ_LEN, dim))
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, hidden) for _ in range(layers))
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def skyline_model_provider() -> nn.Module:
    return TransformerLM()


def skyline_input_provider(batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(0, VOCAB, (batch_size, SEQ_LEN))
    return tokens, torch.randint(0, VOCAB, (batch_size, SEQ_LEN))


def skyline_iteration_provider(model: nn.Module) -> Callable[..., torch.Tensor]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def iteration(tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return iteration

"""A GNMT-like LSTM encoder-decoder with dot-product attention (a small cousin of Skyline's GNMT).

Encoder: embedding, a bidirectional LSTM layer, then a unidirectional one. Decoder: embedding,
an LSTM fed with teacher forcing, attention over the encoder states, and a vocabulary projection.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 1000
SRC_LEN = 16
TGT_LEN = 16


class Encoder(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.bidirectional = nn.LSTM(dim, dim // 2, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        states, _ = self.bidirectional(self.embed(src))
        states, _ = self.lstm(states)
        return states


class Decoder(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.combine = nn.Linear(2 * dim, dim)
        self.classifier = nn.Linear(dim, VOCAB)

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tgt))
        weights = F.softmax(hidden @ memory.transpose(1, 2), dim=-1)
        context = weights @ memory
        combined = torch.tanh(self.combine(torch.cat([hidden, context], dim=-1)))
        return self.classifier(combined)


class Seq2Seq(nn.Module):
    def __init__(self, dim: int = 128) -> None:
        super().__init__()
        self.encoder = Encoder(dim)
        self.decoder = Decoder(dim)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.decoder(tgt, self.encoder(src))


def skyline_model_provider() -> nn.Module:
    return Seq2Seq()


def skyline_input_provider(batch_size: int = 32) -> tuple[torch.Tensor, ...]:
    src = torch.randint(0, VOCAB, (batch_size, SRC_LEN))
    tgt = torch.randint(0, VOCAB, (batch_size, TGT_LEN))
    return src, tgt[:, :-1], tgt[:, 1:]


def skyline_iteration_provider(model: nn.Module) -> Callable[..., torch.Tensor]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def iteration(src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad()
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return iteration

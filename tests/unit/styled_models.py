"""Models as other people write them, in plain torch, tiny: a GPT-style decoder (tied
embeddings, GELU, LayerNorm, causal attention) and a ConvNeXt-style CNN (depthwise convs,
channels-last LayerNorm, layer scale), both trained with AdamW. Each is a module exposing the
three Skyline providers as ``providers``."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

VOCAB, WIDTH, HEADS, CONTEXT = 256, 64, 4, 32


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.up, self.down = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pw2(F.gelu(self.pw1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, dims: tuple[int, int] = (16, 32)) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, dims[0], 4, stride=4)
        self.stage1 = nn.Sequential(ConvNeXtBlock(dims[0]), ConvNeXtBlock(dims[0]))
        self.down = nn.Conv2d(dims[0], dims[1], 2, stride=2)
        self.stage2 = nn.Sequential(ConvNeXtBlock(dims[1]))
        self.head = nn.Linear(dims[1], 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(x.mean(dim=(2, 3)))


def _adamw_step(model: nn.Module, loss_of):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

    def iteration(*batch):
        optimizer.zero_grad()
        loss = loss_of(model, *batch)
        loss.backward()
        optimizer.step()
        return loss

    return iteration


def gpt_providers():
    def model_provider():
        return GPT()

    def input_provider(batch_size=16):
        tokens = torch.randint(0, VOCAB, (batch_size, CONTEXT + 1))
        return tokens[:, :-1], tokens[:, 1:]

    def iteration_provider(model):
        return _adamw_step(model, lambda m, x, y: F.cross_entropy(
            m(x).reshape(-1, VOCAB), y.reshape(-1)))

    return model_provider, input_provider, iteration_provider


def convnext_providers():
    def model_provider():
        return ConvNeXt()

    def input_provider(batch_size=16):
        return torch.randn(batch_size, 3, 64, 64), torch.randint(0, 10, (batch_size,))

    def iteration_provider(model):
        return _adamw_step(model, lambda m, x, y: F.cross_entropy(m(x), y))

    return model_provider, input_provider, iteration_provider

"""Notebook cells that more than one test folder runs in a real kernel."""

# A model small enough that profiling it (with predictions) takes seconds on 2 cores.
SMALL_PROFILED_CELL = '''%%skyline --device cpu
import torch
from torch import nn


def skyline_model_provider():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))


def skyline_input_provider(batch_size=16):
    return torch.randn(batch_size, 32), torch.randint(0, 8, (batch_size,))


def skyline_iteration_provider(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def iteration(x, y):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return iteration
'''

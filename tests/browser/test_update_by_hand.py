"""PyTorch's own tutorial step in a real JupyterLab: no optimizer, the update written out
(``p -= p.grad * lr`` under ``no_grad``, then ``model.zero_grad()``), profiled as the kernel's
first ``%skyline`` after ``%load_ext``.

Session 34 found this notebook shown wrong four ways: the update's time on the model's own
forward (a third of the step, scaled with the batch by a drag), its temporaries "activations",
the gradients "backward temporaries" (no ``.grad`` was left at the end of the step), and, in a
kernel's first profile only, an "other −65 KiB" chip with a warning (torch's first dispatch
mode imported ``torch._dynamo`` inside the forward, whose cycles held its tensors). The widget
must show an "update" segment, the peak in the optimizer step, gradients and optimizer
temporaries in the memory bar, and no negative chip or note about it.

Time: a kernel start, torch import and one profile: 20-40 s on 2 cores.
"""

from __future__ import annotations

import re

import pytest
from conftest import ARTIFACTS
from playwright.sync_api import expect
from test_cell_edit import _part

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

PROVIDERS = '''import torch
from torch import nn
import torch.nn.functional as F


def skyline_model_provider():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def skyline_input_provider(batch_size=64):
    return torch.randn(batch_size, 1, 28, 28), torch.randint(0, 10, (batch_size,))


def skyline_iteration_provider(model):
    lr = 0.5

    def iteration(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad * lr
            model.zero_grad()

    return iteration'''
CELLS = {"providers": PROVIDERS, "profile": "%load_ext skyline_nb\n%skyline --no-predict"}


@pytest.mark.parametrize("frontend", ["lab"])
def test_the_tutorials_update_is_the_update_in_a_kernels_first_profile(notebook):
    notebook.write("update-by-hand.ipynb", CELLS)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(widget).to_have_count(1, timeout=180_000)
    time_bar = _part(widget, "breakdown-time")
    update = time_bar.locator('[data-skyline="segment"][data-node="[optimizer]"]')
    expect(update).to_have_count(1, timeout=60_000)
    expect(update).to_have_attribute("aria-label", re.compile(r"^update\b"))
    memory = _part(widget, "breakdown-memory")
    names = memory.locator(".sk-legend-item").all_text_contents()
    for name in ("parameters", "gradients", "optimizer temporaries"):
        assert name in names, names
    assert "backward temporaries" not in names, names  # (activations: the loss, 4 B)
    expect(_part(widget, "peak-note")).to_have_text(
        re.compile(r"^Peak [\d.]+ MiB, in the optimizer step$"))
    expect(memory.locator('[data-negative="true"]')).to_have_count(0)
    assert "instrumented iteration held" not in widget.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=ARTIFACTS / "update-by-hand-lab.png")

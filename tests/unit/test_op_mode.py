"""The memory run's trackers ride one dispatch mode (``profiler/op_mode.py``): every Python
mode on the stack costs each op ~16 µs, and the peak tracker and the FLOP counter used to be
modes of their own around the op tracker's. What they measure is proven by the FLOP, peak and
report tests; here, that no instrumented iteration of a profile runs under more than one."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils import _python_dispatch

from skyline_nb.profiler.session import profile

MODES: list[int] = []  # dispatch modes on the stack at each forward of ``Watched``


class Watched(nn.Module):
    """A small MLP that notes how many dispatch modes are on the stack at each forward."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        MODES.append(len(_python_dispatch._get_current_dispatch_mode_stack()))
        return self.layers(x)


def test_no_iteration_of_a_profile_runs_under_more_than_one_mode() -> None:
    MODES.clear()

    def iteration_provider(m: nn.Module):
        optimizer = torch.optim.Adam(m.parameters())

        def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()

        return step

    report = profile(Watched, lambda batch_size=8: (torch.randn(batch_size, 16),
                                                         torch.randint(0, 4, (batch_size,))),
                     iteration_provider, batch_size=8, device="cpu")
    assert report.total_flops > 0 and report.peak_bytes > 0
    assert max(MODES) == 1  # the memory run, the op timing, the samples' peaks
    assert 0 in MODES  # the timed iterations run under none

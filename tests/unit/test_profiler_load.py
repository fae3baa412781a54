"""Numbers a user can trust with another process keeping a core busy.

The issue's notebook: a 2-layer MLP at batch 16 and one competing CPU-bound process. This test
runs at ONE torch thread (``conftest.one_thread``), not torch's default: at 2 threads on a
2-core box beside the spinner the MLP's step switches between regimes the plain loop shows too
(12 profiles, 2026-11-25: headline/plain loop 0.74–5.1×, Σ ops 0.14–0.92 of the headline, the
rest "untracked" and named as waiting for a CPU), which no bound a CI run can hold; that case is
measured by ``benchmarks/trust.py --load`` (BENCHMARKS.md) and stays open in issue 12. Each
profile is compared with a plain training loop's median iteration measured in this process just
before it and just after it: with other runnable threads the plain loop itself moves between
regimes (a CI run: 0.23 ms before a profile that measured 0.41 ms, and 0.51–0.54 ms around one
that measured 1.05 ms), so the profile must agree with the nearer of the two. Bounds (typical on
the 2-core dev box with the spinner: headline +1 … +9 %, Σ ops within −10 … +5 % of it,
0.1–0.4 s per profile; before this issue: +36 … +230 %, Σ ops up to 450× the iteration,
3.6–6.3 s):
- over the five profiles, the median headline within −25 … +35 % of a plain loop's median and
  the median Σ op times at least 0.5× the headline; each single profile's headline within
  0.4–3× and its Σ ops at least 0.3× (the host's own slow phases: below);
- Σ op times above the headline by no more than noise plus the dispatch cost each op timed
  from Python carries (``report_checks.untracked_floor``: 25 % or 8 µs an op node; this MLP's
  18 op nodes measured 65–105 µs of it);
- no impossible value in the report, and the profile done in ≤ 2 s.

Until session 40 each profile had to be within 2× on its own. The 2-vCPU VM runs in slow
phases now and then (BENCHMARKS.md, "Host speed phases": 1.5–2.1× slower for 30–500 ms, no
run-queue wait, no steal time), longer than the MLP's whole 0.2 s profile, and a headline timed
inside one read 2.09× the plain loops on both sides of it (a CI run), 1.5–1.7× in 1–3 of 30
profiles here; the single-profile bound failed 2 of 14 runs of this test. The median over the
profiles holds a bias to a tighter bound than a single profile could, and a phase or two cannot
fail it: over five profiles, since a CI run on a VM then 2.2× slower than an hour before (the
example CNN's step 47 ms against 21) had two of three read 1.63× and 1.66× the loops around them
and failed the median; the same hour, 8 profiles in a row read 0.96–1.21× (BENCHMARKS.md,
session 50).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from skyline_nb.profiler.session import profile  # noqa: E402
from skyline_nb.report_checks import impossible_values, untracked_floor  # noqa: E402


def model_provider() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))


def input_provider(batch_size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))


def iteration_provider(model: nn.Module) -> Callable[[torch.Tensor, torch.Tensor], None]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()

    def iteration(x: torch.Tensor, y: torch.Tensor) -> None:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return iteration


PROFILES = 5


def plain_loop_median(iterations: int = 300) -> float:
    model = model_provider()
    step = iteration_provider(model)
    x, y = input_provider(16)
    for _ in range(20):
        step(x, y)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        step(x, y)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


@pytest.mark.slow
def test_profiles_under_a_competing_process_agree_with_a_plain_loop(busy_core) -> None:
    assert busy_core.poll() is None
    ratios, shares, seen = [], [], []
    for _ in range(PROFILES):
        before = plain_loop_median()
        start = time.perf_counter()
        report = profile(model_provider, input_provider, iteration_provider, device="cpu")
        wall_s = time.perf_counter() - start
        after = plain_loop_median()
        ops_ms = report.iteration_ms - report.untracked_ms
        truth = min((before, after), key=lambda t: abs(report.iteration_ms / t - 1))
        ratios.append(report.iteration_ms / truth)
        shares.append(ops_ms / report.iteration_ms)
        seen.append((report.iteration_ms, ops_ms, before, after))
        assert report.untracked_ms >= untracked_floor(report), (ops_ms, report.iteration_ms)
        assert impossible_values(report) == [], report.warnings
        assert wall_s <= 2.0
    assert 0.75 <= statistics.median(ratios) <= 1.35, seen
    assert statistics.median(shares) >= 0.5, seen
    assert all(0.4 <= r <= 3.0 for r in ratios), seen
    assert all(share >= 0.3 for share in shares), seen

"""What timing each op in situ adds to it: a constant per timed window, or a share of its time?

Level 2 times every op between two clock reads inside a dispatch mode (``op_mode.py``). Where
the ops' sum exceeds the headline by more than ``level2.UNTRACKED_TOLERANCE``, the op times
are scaled down to the headline in proportion (``level2.fit_to_headline``): right when the
excess is the host's pace (every op slower by one factor), wrong when it is a fixed cost per
timed window (a call from Python into the op, the mode's work between ops evicting what the
next op needs), which proportional scaling leaves on the small ops and takes from the large.

A chain of ``x = x * w + 1`` (two ops a layer, their backward run by autograd) at widths
whose ops take ~1 µs to ~100 µs, and ``depth`` layers, is profiled (``predict=False``); per
case, the medians over ``--rounds`` interleaved rounds of: records (ops in the report), timed
windows (forward and backward op calls), the headline, the first instrumented pass's Σ op
times before any scaling, and the excess Σ − headline per window and as % of the headline.
A constant µs per window across widths is a fixed cost per window; a constant % is the pace.

    PYTHONPATH=$PWD python benchmarks/op_overhead.py [--threads 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import skyline_nb
from skyline_nb.profiler import level2
from skyline_nb.profiler.operations import OperationTracker

WIDTHS = (16, 4096, 65536)
DEPTHS = (50, 200)


class Chain(nn.Module):
    """``depth`` layers of one multiply by a weight and one add: ops of one size each."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.depth = depth

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.depth):
            x = x * self.weight + 1.0
        return x.sum()


class FirstPass:
    """The first instrumented op pass of each profile: records, windows and Σ op times."""

    def __init__(self) -> None:
        self.passes: list[tuple[int, int, float]] = []
        self._windows = 0

    def __enter__(self) -> FirstPass:
        self._op_times, self._finish = level2.op_times, OperationTracker.finish
        watcher = self

        def finish(tracker: OperationTracker) -> None:
            watcher._windows = len(tracker._timers)
            watcher._finish(tracker)

        def op_times(*args, **kwargs):
            ops, starved = watcher._op_times(*args, **kwargs)
            watcher.passes.append((len(ops.records), watcher._windows, ops.ops_ms()))
            return ops, starved

        OperationTracker.finish, level2.op_times = finish, op_times
        return self

    def __exit__(self, *exc: object) -> None:
        OperationTracker.finish, level2.op_times = self._finish, self._op_times


def one_profile(width: int, depth: int, watcher: FirstPass) -> dict[str, float]:
    watcher.passes.clear()
    report = skyline_nb.profile(
        lambda: Chain(width, depth),
        lambda batch_size=8: (torch.randn(batch_size, width),),
        lambda model: (lambda x: model(x).backward()),
        device="cpu",
        predict=False,
    )
    records, windows, ops_ms = watcher.passes[0]
    excess = ops_ms - report.iteration_ms
    return {"records": records, "windows": windows, "head": report.iteration_ms,
            "ops": ops_ms, "us_per_window": 1000 * excess / windows,
            "pct": 100 * excess / report.iteration_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's own)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cases = [(w, d) for w in WIDTHS for d in DEPTHS]
    rows: dict[tuple[int, int], list[dict[str, float]]] = {c: [] for c in cases}
    with FirstPass() as watcher:
        for _ in range(args.rounds):
            for case in cases:
                rows[case].append(one_profile(*case, watcher))
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{args.rounds} rounds (medians)")
    print("| width | depth | records | windows | headline ms | Σ ops ms | excess µs/window | "
          "excess % |")
    print("|---|---|---|---|---|---|---|---|")
    columns = (("records", ".0f"), ("windows", ".0f"), ("head", ".2f"), ("ops", ".2f"),
               ("us_per_window", "+.2f"), ("pct", "+.1f"))
    for (width, depth), found in rows.items():
        cells = [format(statistics.median(r[key] for r in found), spec) for key, spec in columns]
        print(f"| {width} | {depth} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""A CPU's slow steps after a pause, and the warm-up before a short step's timings (session 51).

A CPU that has not run a step for a while runs it slowly for tens of milliseconds (``timing``'s
module doc). Two measurements:

- ``--course``: a plain loop of the step, then a pause (``spin``: Python busy for ``--pause`` ms,
  as the profiler's bookkeeping is; ``sleep``; ``none``), then ``--iterations`` timed ones; per
  pause kind, the median over ``--rounds`` of each iteration (grouped by index: [0], [1], …,
  [8–11], …) over the median of the ``none`` rounds;
- ``--ab`` (default): issue 12's protocol in one process, ``trust.py``'s order (a fresh step
  stepped for ``trust.WARMUP_MS``, its loop as the truth, the kineto reference, the profile
  with the plain step timed right after its headline, a loop after), the profile with the
  warm-up (until the pace settles), without it (``timing.WARM_BELOW_MS`` = 0) and with the
  whole of it (``whole``: session 51's rule, all of ``warm_ms``) in turn, round by round: iter %
  (headline over the truth), moment % (over the plain step right after the headline), drift %
  (the loop after over the truth), wall s. One process, so the host's pace moves both arms alike.

    PYTHONPATH=$PWD python benchmarks/warm_up.py --course --models mlp:32 --pause 50
    PYTHONPATH=$PWD python benchmarks/warm_up.py --ab --models mlp:16 mlp:32 --rounds 8
    PYTHONPATH=$PWD python benchmarks/warm_up.py --ab --threads 1 --models mlp:32
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import example_providers
import trust
from kineto_ops import aten_ms_per_step

GROUPS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96)


def timed(step: Callable[..., Any], inputs: tuple, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        step(*inputs)
        out.append((time.perf_counter_ns() - start) / 1e6)
    return out


def pause(kind: str, ms: float) -> None:
    """What the step waits through: Python that makes objects (``spin``), a sleep, nothing."""
    if kind == "sleep":
        time.sleep(ms / 1e3)
    elif kind == "spin":
        end, junk = time.perf_counter() + ms / 1e3, []
        while time.perf_counter() < end:
            junk.append([1, 2])


def course(providers: tuple, batch: int, rounds: int, iterations: int, ms: float) -> str:
    step, inputs = trust.warm_step(providers, batch)
    runs: dict[str, list[list[float]]] = {"none": [], "spin": [], "sleep": []}
    for _ in range(rounds):
        for kind, seen in runs.items():
            timed(step, inputs, iterations)  # steady before the pause
            pause(kind, ms)
            seen.append(timed(step, inputs, iterations))
    steady = statistics.median(t for run in runs["none"] for t in run)
    lines = [f"steady {steady:.3f} ms; pause {ms:.0f} ms; % over steady by iteration index"]
    ends = [g for g in GROUPS if g < iterations]
    for kind, seen in runs.items():
        columns = [statistics.median(c) for c in zip(*seen, strict=True)]
        cells = [f"[{lo}]{100 * (statistics.median(columns[lo:hi]) / steady - 1):+.0f}"
                 for lo, hi in zip(ends, [*ends[1:], iterations], strict=True)]
        lines.append(f"  {kind:5s} " + " ".join(cells))
    return "\n".join(lines)


def ab(providers: tuple, batch: int, rounds: int) -> str:
    import skyline_nb
    from skyline_nb.profiler import timing

    warm_below, settled = timing.WARM_BELOW_MS, timing.SETTLED_WINDOWS
    arms = {"warm-up": (warm_below, settled), "none": (0.0, settled),
            "whole": (warm_below, 10**9)}  # whole: session 51's rule, all of ``warm_ms``
    rows: dict[str, list[tuple[float, float, float, float]]] = {arm: [] for arm in arms}
    try:
        for r in range(rounds):
            order = list(arms)[r % len(arms):] + list(arms)[:r % len(arms)]
            for arm in order:
                timing.WARM_BELOW_MS, timing.SETTLED_WINDOWS = arms[arm]
                step, inputs = trust.warm_step(providers, batch)
                truth = trust.median_ms(step, inputs, 15)
                aten_ms_per_step(step, inputs, 15)
                with trust.moment_after_headline(step, inputs) as moment:
                    start = time.perf_counter()
                    report = skyline_nb.profile(*providers, batch_size=batch, device="cpu")
                    wall = time.perf_counter() - start - moment.get("spent_ms", 0.0) / 1e3
                after = trust.plain_median(providers, batch, 15)
                rows[arm].append((report.iteration_ms / truth - 1,
                                  report.iteration_ms / moment["ms"] - 1, after / truth - 1, wall))
    finally:
        timing.WARM_BELOW_MS, timing.SETTLED_WINDOWS = warm_below, settled
    lines = []
    for arm, seen in rows.items():
        each = " ".join(f"{100 * s[0]:+.0f}" for s in seen)
        lines.append(
            f"  {arm:8s} iter {100 * statistics.median(s[0] for s in seen):+.1f} % ({each}) "
            f"moment {100 * statistics.median(s[1] for s in seen):+.1f} % "
            f"drift {100 * statistics.median(s[2] for s in seen):+.1f} % "
            f"wall {statistics.median(s[3] for s in seen):.2f} s")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mlp:16", "mlp:32"])
    parser.add_argument("--course", action="store_true", help="the slow-down after a pause")
    parser.add_argument("--ab", action="store_true", help="with and without the warm-up")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=64)
    parser.add_argument("--pause", type=float, default=50.0, help="ms (--course)")
    parser.add_argument("--threads", type=int, default=None, help="default: torch's own")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {torch.get_num_threads()} threads")
    for spec in args.models:
        name, batch = spec.split(":")
        providers, _ = example_providers.named_providers(name)
        print(f"{name}@{batch}:", flush=True)
        if args.course:
            print(course(providers, int(batch), args.rounds, args.iterations, args.pause))
        if args.ab or not args.course:
            print(ab(providers, int(batch), args.rounds), flush=True)


if __name__ == "__main__":
    main()

"""Does the untrusted-curve rescue (``sample_plan.RESCUE_SHARE``) keep dragging on, at what cost?

For each model and start, PAIRS interleaved pairs of ``skyline_nb.profile``: the shipped plan,
and the plan before the rescue (an untrusted curve keeps to the budget, no sample is timed
again), alternating which goes first. One warm-up profile per model first: a process's first
profile pays one-time costs (imports, dispatch caches) that are not the plan's. Prints, per
arm: how many profiles left dragging on, the cost in the profile's own iterations (wall time of
the whole profile / its headline), and how many samples were timed again.

    PYTHONPATH=$PWD python benchmarks/rescue_ab.py --pairs 12
    PYTHONPATH=$PWD python benchmarks/rescue_ab.py --models lstm --starts 8 --pairs 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from example_providers import named_providers

import skyline_nb
from skyline_nb.profiler import iteration, sample_plan

SHIPPED_SHARE = sample_plan.RESCUE_SHARE
SHIPPED_MOST_OFF = sample_plan._most_off
RETIMES = {"n": 0}
_time_again = iteration.WarmTrial.time_again


def _counted(self: iteration.WarmTrial, *args: object, **kwargs: object) -> object:
    RETIMES["n"] += 1
    return _time_again(self, *args, **kwargs)


def arm(rescue: bool) -> None:
    """The shipped plan, or the one before the rescue."""
    sample_plan.RESCUE_SHARE = SHIPPED_SHARE if rescue else 0.0
    sample_plan._most_off = SHIPPED_MOST_OFF if rescue else (lambda *args: None)


def one(provs: tuple, start: int) -> tuple[bool, float, int, str]:
    RETIMES["n"] = 0
    began = time.perf_counter()
    report = skyline_nb.profile(*provs, batch_size=start, device="cpu")
    wall = time.perf_counter() - began
    return (report.models.can_manipulate, wall / (report.iteration_ms / 1e3), RETIMES["n"],
            report.models.reason or "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn", "transformer", "lstm"])
    parser.add_argument("--starts", nargs="+", type=int, default=[8, 16])
    parser.add_argument("--pairs", type=int, default=12)
    args = parser.parse_args()
    iteration.WarmTrial.time_again = _counted
    print(f"# benchmarks/rescue_ab.py {' '.join(sys.argv[1:])} | torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    for name in args.models:
        provs, _ = named_providers(name)
        one(provs, args.starts[0])  # warm-up, not counted
        for start in args.starts:
            results: dict[bool, list[tuple[bool, float, int, str]]] = {True: [], False: []}
            for i in range(args.pairs):
                for rescue in (True, False) if i % 2 == 0 else (False, True):
                    arm(rescue)
                    results[rescue].append(one(provs, start))
            for rescue in (True, False):
                rows = results[rescue]
                costs = [r[1] for r in rows]
                print(f"{name}@{start} {'rescue   ' if rescue else 'no rescue'}: dragging on "
                      f"{sum(r[0] for r in rows)}/{len(rows)}, cost median "
                      f"{statistics.median(costs):.1f} (max {max(costs):.1f}) iterations, "
                      f"{sum(r[2] for r in rows)} samples timed again in "
                      f"{sum(r[2] > 0 for r in rows)} profiles")
                for reason in sorted({r[3][:120] for r in rows if not r[0]}):
                    print(f"    off: {reason}")
            sys.stdout.flush()
    arm(True)


if __name__ == "__main__":
    main()

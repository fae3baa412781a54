"""Which of a profile's samples its predictions need: the curves refitted on subsets of them.

A CPU profile whose budget reaches 4× the user's batch measures ½×, 2× and 4× (issue 12's cost
bar: 40–48 of the user's iterations, where 2× alone costs 6–8). This refits, for every profile
in a ``prediction_accuracy.py --json`` file that sampled both 2× and 4×, three subsets of its
own samples with the shipped curves (``PerformanceModels.from_samples``) and prints the mean
|error| (%) of each at the held-out sizes, against their measured medians:

- to 2×: the samples up to 2× (what a profile without the 4× sample has);
- no 2×: ½×, the user's batch and 4×;
- all: every sample up to 4×.

Time by default; ``--memory`` for peak bytes (without the peaks per phase, which the JSON does
not keep: the profile's own memory curve joins each phase's samples, so this reads coarser
than the profile would).

    PYTHONPATH=$PWD python benchmarks/sample_subsets.py benchmarks/results/accuracy_s33_*.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skyline_nb.models.performance import PerformanceModels

SUBSETS = ("to 2×", "no 2×", "all")


def subset_errors(samples: list[list[float]], truth: dict[int, float], start: int,
                  column: int) -> list[float | None] | None:
    """Mean |error| % of each subset (None: its curve refused), or None without 2× and 4×."""
    by_size = {int(s[0]): s for s in samples}
    if 2 * start not in by_size or 4 * start not in by_size:
        return None
    sizes = sorted(n for n in by_size if n <= 4 * start)
    chosen = ([n for n in sizes if n <= 2 * start], [n for n in sizes if n != 2 * start], sizes)
    return [_error([by_size[n] for n in subset], truth, column) for subset in chosen]


def _error(samples: list[list[float]], truth: dict[int, float], column: int) -> float | None:
    fit = PerformanceModels.from_samples([int(s[0]) for s in samples], [s[1] for s in samples],
                                         [int(s[2]) for s in samples], 1 << 40, None)
    if not fit.can_manipulate:
        return None
    predict = fit.predict_iteration_ms if column == 1 else fit.predict_peak_bytes
    return statistics.mean(abs(100 * (predict(n) - t) / t) for n, t in truth.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--memory", action="store_true")
    args = parser.parse_args()
    column = 2 if args.memory else 1
    print(f"# mean |{'memory' if args.memory else 'time'} error| % at the held-out sizes, per "
          f"profile: {' / '.join(SUBSETS)}")
    for path in args.files:
        for case in json.loads(path.read_text()):
            truth = {int(n): statistics.median(run[column - 1] for run in runs)
                     for n, runs in case["raw"]["held_out"].items()}
            rows = [r for s in case["raw"]["samples"]
                    if (r := subset_errors(s, truth, case["start"], column)) is not None]
            if rows:
                cells = "; ".join(" / ".join("-" if v is None else f"{v:.1f}" for v in r)
                                  for r in rows)
                print(f"{path.name} {case['model']}@{case['start']} (held out at "
                      f"{', '.join(map(str, sorted(truth)))}): {cells}")


if __name__ == "__main__":
    main()

"""Does a CPU's sampling floor buy accuracy, and what does it cost the whole ``%skyline``?

A CPU's samples may spend 13 of the user's iterations, lifted towards 0.25 s (no further than
1.5× the rest of the profile) for steps under ~19 ms (``samples.sampling_budget_ms``). The
floor was made for sub-millisecond steps, whose few sizes need that much to be timed at all;
it also lifts every example CNN, Transformer and LSTM at 2 threads, whose profiles then
sometimes measure 4× the batch (12–15 of the user's iterations more) and cost 40–48 of them
against issue 12's bar of 30. This runs ``prediction_accuracy.py`` in alternating processes,
the shipped budget (``--arm floor``) against 13 iterations strictly (``strict``), ``--rounds``
times each, with the arguments after ``--`` passed on, and prints its rows and signed errors.

    PYTHONPATH=$PWD python benchmarks/floor_ab.py --rounds 3 -- --models cnn transformer lstm \\
        --starts 8 16 --repeats 3 --scale stock --threads 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyline_nb.profiler.samples import SamplingPolicy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

ARM = "SKYLINE_FLOOR_AB_ARM"


def strict_budget(policy: SamplingPolicy, iteration_ms: float, so_far_ms: float,
                  warms: bool = False) -> float:
    """``sampling_budget_ms`` without the floor: the policy's iterations of the user's (a GPU's
    bar over the profile as shipped)."""
    from skyline_nb.profiler import samples

    if policy.budget is None:
        return samples.COST_BAR * so_far_ms
    return iteration_ms * policy.budget


def run_arm() -> None:
    """In the child: the arm's budget, then ``prediction_accuracy``'s own main."""
    from skyline_nb.profiler import samples

    if os.environ[ARM] == "strict":
        samples.sampling_budget_ms = strict_budget
    import prediction_accuracy

    prediction_accuracy.main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        help="-- then prediction_accuracy.py's arguments")
    args = parser.parse_args()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    print(f"# {' '.join(sys.argv)}", flush=True)
    for round_ in range(1, args.rounds + 1):
        for arm in ("floor", "strict"):
            print(f"=== arm={arm} round={round_}", flush=True)
            done = subprocess.run(
                [sys.executable, __file__, *rest], env={**os.environ, ARM: arm},
                capture_output=True, text=True, check=True)
            rows = [line for line in done.stdout.splitlines()
                    if (line.startswith("| ") and "| model |" not in line)
                    or (line.startswith("  ") and "@" in line.split(":")[0])]
            print("\n".join(dict.fromkeys(rows)), flush=True)


if __name__ == "__main__":
    if ARM in os.environ:
        run_arm()
    else:
        main()

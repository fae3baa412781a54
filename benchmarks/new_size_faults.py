"""What the first iterations at a batch size the process has not run cost: time and page faults.

A profile's sample measures its size's peak on the first iteration there and times the next
ones. This runs an example at its batch until warm, then switches to 2× and 4× it: the first
five iterations after each switch, as ratios to that size's steady median (iterations 7–12), and
the minor faults of each; three rounds, so the second and third visit a size the process has
run before. ``--settle`` first puts malloc in the profile's steady state (``allocator.settle``).

    PYTHONPATH=$PWD python benchmarks/new_size_faults.py --threads 1 --model lstm --settle
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from example_providers import providers

from skyline_nb.profiler.allocator import settle
from skyline_nb.profiler.device import resolve_device
from skyline_nb.profiler.timing import timed_chunk

CPU = resolve_device("cpu")


def timed(step, inputs: tuple, n: int) -> tuple[list[float], list[float]]:
    """``n`` iterations on ``inputs``, each a chunk of its own as the profiler times them
    (``timing.timed_chunk``): ms and minor faults of each."""
    chunks = [timed_chunk(lambda: step(*inputs), CPU, 1) for _ in range(n)]
    return [times[0] for times, _, _ in chunks], [faults for _, _, faults in chunks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="lstm")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--settle", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.settle:
        settle()
    (model_provider, input_provider, iteration_provider), _ = providers(args.model, "cpu",
                                                                        "stock")
    step = iteration_provider(model_provider())
    user = input_provider(args.batch)
    timed(step, user, 10)
    print(f"# {args.model}@{args.batch}, {args.threads} threads, settled={args.settle}")
    for round_ in range(args.rounds):
        for size in (2 * args.batch, 4 * args.batch):
            ms, faults = timed(step, input_provider(size), 12)
            steady = statistics.median(ms[6:])
            ratios = ", ".join(f"{t / steady:.3f}" for t in ms[:5])
            print(f"round {round_ + 1}, {size}: steady {steady:.2f} ms; iterations 1-5: "
                  f"{ratios}; faults {[round(f) for f in faults[:6]]}")
            timed(step, user, 5)


if __name__ == "__main__":
    main()

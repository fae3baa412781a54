"""Why a 2-thread CPU step's time bends with the batch where a 1-thread one stays a line.

Torch runs an op on its intra-op threads only above a grain of work (``at::parallel_for``'s
32,768 elements; oneDNN and the BLAS decide by their own sizes), so the share of a step that
two threads share grows with the batch: the time per added sample falls as the batch grows, at
2 threads and not at one. A curve through samples up to 4× the batch then reads high beyond
them (the example LSTM from 8 at 2 threads: +10 … +24 % at 48–64 in ``prediction_accuracy.py``,
a line at one thread; BENCHMARKS.md, session 42).

For each model: plain-loop medians (``trust.warm_step``, ``--plain`` single iterations of a
warm fresh model) at each batch in ``--batches``, at 2 threads and at one, in ``--passes``
passes alternating the sizes' order (a shared host's pace moves between passes); printed per
thread count the medians over the passes and the ms each added sample costs between
neighbouring sizes, then the 1-thread / 2-thread ratio (the speedup) per size. ``--threads``
takes other counts: more threads than the machine's cores is what torch runs by default in a
container whose CPU quota hides no core (``profiler/cpus.py``; BENCHMARKS.md, session 47).

    PYTHONPATH=$PWD python benchmarks/thread_speedup.py --models lstm cnn
    PYTHONPATH=$PWD python benchmarks/thread_speedup.py --batches 16 --threads 1 2 3 4 8
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import example_providers
from trust import median_ms, warm_step


def medians(providers: tuple, batches: list[int], passes: int, iterations: int,
            counts: list[int]) -> dict[int, dict[int, float]]:
    """{threads: {batch: median over passes of a plain loop's median ms}}."""
    import torch

    found: dict[tuple[int, int], list[float]] = {}
    for index in range(passes):
        for threads in counts:
            torch.set_num_threads(threads)
            for batch in batches if index % 2 == 0 else batches[::-1]:
                found.setdefault((threads, batch), []).append(
                    median_ms(*warm_step(providers, batch), iterations))
    return {threads: {b: statistics.median(found[threads, b]) for b in batches}
            for threads in counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["lstm"], choices=example_providers.MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[8, 16, 24, 32, 40, 48, 64])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--plain", type=int, default=9, help="iterations per plain loop")
    parser.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    args = parser.parse_args()
    import torch

    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}")
    for name in args.models:
        providers, _ = example_providers.providers(name, "cpu", "stock")
        found = medians(providers, args.batches, args.passes, args.plain, args.threads)
        pairs = list(itertools.pairwise(args.batches))
        for threads, ms in found.items():
            steps = " ".join(f"{(ms[b] - ms[a]) / (b - a):.3f}" for a, b in pairs)
            print(f"{name} {threads} thread(s): "
                  + " ".join(f"{b}: {ms[b]:.2f}" for b in args.batches)
                  + (f" | ms per added sample: {steps}" if pairs else ""), flush=True)
        if {1, 2} <= set(found):
            speedup = " ".join(f"{b}: {found[1][b] / found[2][b]:.2f}" for b in args.batches)
            print(f"{name} speedup (1 thread / 2 threads): {speedup}", flush=True)


if __name__ == "__main__":
    main()

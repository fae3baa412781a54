"""Does an iteration's time depend on the sizes the process ran before? (glibc malloc's state)

Each mode runs in a fresh interpreter: the example CNN, one model, batch sizes in ascending
order; at each size 8 warm-up iterations, then 10 timed ones (median wall ms, median minor page
faults per iteration from ``getrusage``). ``fresh``: as a new process runs; ``settled``: after
``skyline_nb.profiler.allocator.settle()``, as every profile now starts.

    python benchmarks/allocator.py                       # default threads
    python benchmarks/allocator.py --threads 1 --sizes 8 16 32 64 128 256
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, statistics, sys, time
sys.path.insert(0, {root!r})
import torch
from skyline_nb.examples import cnn
from skyline_nb.profiler import allocator
mode, threads, sizes = sys.argv[1], int(sys.argv[2]), [int(a) for a in sys.argv[3:]]
if threads:
    torch.set_num_threads(threads)
if mode == "settled":
    allocator.settle()
torch.manual_seed(0)
model = cnn.skyline_model_provider()
step = cnn.skyline_iteration_provider(model)
rows = []
for n in sizes:
    inputs = cnn.skyline_input_provider(n)
    for _ in range(8):
        step(*inputs)
    ms, faults = [], []
    for _ in range(10):
        f0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
        step(*inputs)
        ms.append((time.perf_counter() - t0) * 1e3)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    rows.append([n, statistics.median(ms), statistics.median(faults)])
print(json.dumps(rows))
"""


def run(mode: str, threads: int, sizes: list[int]) -> list[list[float]]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT)), mode, str(threads),
         *map(str, sizes)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    parser.add_argument("--sizes", nargs="+", type=int, default=[8, 16, 32, 64, 128])
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per mode")
    args = parser.parse_args()
    print(f"# {' '.join(sys.argv)}")
    print("| mode | round | " + " | ".join(f"{n}: ms (faults/iter)" for n in args.sizes) + " |")
    print("|---|---|" + "---|" * len(args.sizes))
    for r in range(args.rounds):
        for mode in ("fresh", "settled"):
            rows = run(mode, args.threads, args.sizes)
            cells = " | ".join(f"{ms:.1f} ({faults:,.0f})" for _, ms, faults in rows)
            print(f"| {mode} | {r + 1} | {cells} |", flush=True)


if __name__ == "__main__":
    main()

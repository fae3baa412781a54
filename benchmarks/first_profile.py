"""A kernel's first ``%skyline`` against its second: what a process does once stays out of it.

Each round starts a fresh process that profiles one example model twice, as a notebook's first
and second ``%skyline``; per model, the medians over the rounds of each profile's stages
(``stage_cost.stage_costs``: the memory run, the op timing, the samples), the batch sizes it
sampled, its "other" bytes at the peak, and the first call's seconds outside its stages
(PyTorch's dispatch machinery, 0.8 s, loaded before anything is measured; the device's peaks,
0.25 s, measured first and not counted in the cost that budgets the samples). Session 34 found
the first profile's memory run importing ``torch._dynamo`` inside the user's forward: its cycles
held the forward's tensors ("other" −65 KiB on an MLP updated by hand), and the 0.8 s and the
peaks' 0.25 s counted in the first profile's cost, which budgets its samples.

    PYTHONPATH=$PWD python benchmarks/first_profile.py --rounds 3 --models mlp cnn transformer lstm
    PYTHONPATH=$PWD python3 benchmarks/first_profile.py --device cuda --rounds 2 --models mlp lstm

On CUDA the memory run also sets how long the op timing holds the GPU's queue
(``level2.reconciled_op_times``: a multiple of the memory run's host time), so a first profile
whose step builds no optimizer, and so imported ``torch._dynamo`` in its memory run, held the
queue for a multiple of 0.8 s in every op-timing run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OPS_STAGE = "timing each op (run N)"


def child(name: str, batch: int, device: str) -> None:
    """Two profiles in this fresh process; one JSON line per profile. The memory run is timed
    around its function: on a CPU it runs inside level 1's stage (right after the warm-up)."""
    from example_providers import providers
    from stage_cost import stage_costs

    import skyline_nb.profiler.session as session
    from skyline_nb.categories import Category

    provs, _ = providers(name, device, "stock")
    original = session.memory_run
    memory_ms = [0.0]

    def memory_run(*args: object, **kwargs: object) -> object:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            memory_ms[0] += 1000 * (time.perf_counter() - began)

    session.memory_run = memory_run
    for _ in range(2):
        memory_ms[0] = 0.0
        began = time.perf_counter()
        costs, staged_ms, report = stage_costs(provs, batch, device)
        whole_ms = 1000 * (time.perf_counter() - began)
        print(json.dumps({
            "memory_ms": memory_ms[0], "ops_ms": costs.get(OPS_STAGE, 0.0),
            "samples": [s.batch_size for s in report.samples],
            "other": report.categories[Category.UNTRACKED], "outside_ms": whole_ms - staged_ms,
            "counted_ms": staged_ms - sum(v for k, v in costs.items() if "peak FLOP/s" in k)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn", "transformer", "lstm"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.device)
        return
    print(f"# {' '.join(sys.argv)}")
    print("| model | batch | memory run ms 1st / 2nd | op timing ms 1st / 2nd | counted ms "
          "1st / 2nd | outside the stages s 1st / 2nd | other B 1st / 2nd | samples alike |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        runs = []
        for _ in range(args.rounds):
            done = subprocess.run([sys.executable, __file__, "--child", name, str(args.batch),
                                   "--device", args.device],
                                  capture_output=True, text=True, check=True)
            runs.append([json.loads(line) for line in done.stdout.splitlines()[-2:]])

        alike = sum(r[0]["samples"] == r[1]["samples"] for r in runs)
        print(f"| {name} | {args.batch} | {pair(runs, 'memory_ms')} | {pair(runs, 'ops_ms')} | "
              f"{pair(runs, 'counted_ms', fmt='.0f')} | "
              f"{pair(runs, 'outside_ms', 1e-3, '.2f')} | {pair(runs, 'other', fmt='.0f')} | "
              f"{alike} of {len(runs)} |")


def pair(runs: list[list[dict]], key: str, scale: float = 1.0, fmt: str = ".1f") -> str:
    """The first profile's median and the second's, "first / second"."""
    first, second = (statistics.median(r[i][key] * scale for r in runs) for i in (0, 1))
    return f"{first:{fmt}} / {second:{fmt}}"


if __name__ == "__main__":
    main()

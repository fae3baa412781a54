"""CUDA: how short may the held queue be? (The hold is 13–26 % of a GPU profile: session 12.)

Before each instrumented run the profiler enqueues a spin kernel of ``session.HOLD_FACTOR`` ×
the memory run's host time + ``HOLD_MARGIN_MS``, so that every op's kernels already wait in the
queue when the GPU reaches them and each op's event pair times the GPU's work alone
(``Device.hold_queue``). For each model and factor, interleaved over ``--rounds``: one
``profile(predict=False)`` with an event recorded right after each spin. Printed per profile and
as medians per factor: how many instrumented runs *drained* (the spin had ended by the time the
host finished enqueueing the run, so the GPU caught up and its op times may include launch
gaps), Σ op times / the headline, the op-timing stage's ms (progress callback) and the whole
profile's. Written before a GPU could run it (session 12): check its first output.

    PYTHONPATH=$PWD python3 benchmarks/cuda_hold.py --factors 2 1 0.5 --rounds 3
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
from stage_cost import TIMING_OPS, stage_costs

from skyline_nb.profiler import session
from skyline_nb.profiler.device import CudaDevice
from skyline_nb.profiler.operations import OperationTracker

SPIN_ENDS: list[torch.cuda.Event] = []
DRAINED: list[bool] = []


def watch_holds() -> None:
    """Record an event after every spin; at each instrumented run's exit, whether it ended."""
    hold, leave = CudaDevice.hold_queue, OperationTracker.__exit__

    def hold_queue(self: CudaDevice, ms: float) -> None:
        hold(self, ms)
        with torch.cuda.device(self.torch_device):
            event = torch.cuda.Event()
            event.record()
        SPIN_ENDS.append(event)

    def exit_(self: OperationTracker, *exc: object) -> None:
        if self.hold_ms > 0 and SPIN_ENDS:
            DRAINED.append(SPIN_ENDS[-1].query())
        leave(self, *exc)

    CudaDevice.hold_queue, OperationTracker.__exit__ = hold_queue, exit_


def one(provs: tuple, batch: int, factor: float) -> dict[str, float]:
    session.HOLD_FACTOR = factor
    DRAINED.clear()
    costs, wall_ms, report = stage_costs(provs, batch, "cuda", predict=False)
    return {"drained": sum(DRAINED), "runs": len(DRAINED),
            "ops": (report.iteration_ms - report.untracked_ms) / report.iteration_ms,
            "timing_ms": costs.get(TIMING_OPS, 0.0), "wall_ms": wall_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["mlp:32", "cnn:32", "transformer:8",
                                                        "lstm:32"], help="model:batch pairs")
    parser.add_argument("--factors", nargs="+", type=float, default=[2.0, 1.0, 0.5])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("cuda_hold.py needs a CUDA device")
    watch_holds()
    for pair in args.models:
        name, batch = pair.split(":")
        provs, _ = providers(name, "cuda", "stock")
        one(provs, int(batch), args.factors[0])  # a process's first profile: caches, imports
        rows: dict[float, list[dict[str, float]]] = {f: [] for f in args.factors}
        for r in range(args.rounds):
            order = args.factors if r % 2 == 0 else args.factors[::-1]
            for factor in order:
                row = one(provs, int(batch), factor)
                rows[factor].append(row)
                print(f"{pair} hold {factor}×: drained {row['drained']}/{row['runs']}, "
                      f"Σ ops {row['ops']:.3f} of the headline, op timing "
                      f"{row['timing_ms']:.0f} ms, profile {row['wall_ms']:.0f} ms", flush=True)
        for factor, got in rows.items():
            med = {k: statistics.median(g[k] for g in got) for k in got[0]}
            print(f"== {pair} hold {factor}×: drained {sum(g['drained'] for g in got)}/"
                  f"{sum(g['runs'] for g in got)} runs, Σ ops {med['ops']:.3f}, op timing "
                  f"{med['timing_ms']:.0f} ms, profile {med['wall_ms']:.0f} ms (medians)")


if __name__ == "__main__":
    main()

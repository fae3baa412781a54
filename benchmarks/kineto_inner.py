"""Would timing ops below Python remove the profile's untracked-time bias? Σ op time four ways.

Issue 12's remaining gap: against the kineto reference (``kineto_ops.py``: what a plain step
spends outside its top-level aten ops) the profile's untracked time reads 4–12 points low on
models of many small ops, because each op window, timed around ``op(*args)`` inside the Python
dispatch mode, also holds the call from Python back into C++ (argument parsing, wrapping the
outputs). The issue suggested RecordFunction / kineto timestamps instead. Under the mode kineto
records each op twice: the outer event (the user's call, holding the mode's Python) and the
op's own, a child of a ``PythonDispatchMode`` event: the op below Python. Per round, for one
warm example step:

- plain: the median of 30 uninstrumented steps;
- ref: Σ of the outermost aten events of a plain step under kineto (the reference);
- ours: Σ of the profile's op windows (``OperationTracker``), median of 5 steps;
- inner: Σ of the ops' own kineto events under the mode, median of 3 steps (kineto's own
  RecordFunction cost, ~0.3–1 µs an event, lands inside them, once for every op they call);
- ours+k: the profile's windows while kineto also runs (what kineto adds to a window).

Each as untracked % = (plain − Σ) / plain.

    PYTHONPATH=$PWD python benchmarks/kineto_inner.py --threads 2 --batch 16 --rounds 3
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

import torch
from example_providers import MODELS, providers
from kineto_ops import aten_ms_per_step
from torch.profiler import ProfilerActivity, profile

from skyline_nb.profiler.device import resolve_device
from skyline_nb.profiler.operations import OperationTracker
from skyline_nb.profiler.stacks import UserCode


def plain_ms(step: Callable[..., Any], inputs: tuple, steps: int = 30) -> float:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step(*inputs)
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def windows_ms(model: Any, step: Callable[..., Any], inputs: tuple,
               under_kineto: bool = False) -> tuple[float, float]:
    """Σ of the profile's op windows over one step, and Σ of the ops' own kineto events (0.0
    unless ``under_kineto``)."""
    ops = OperationTracker(model, resolve_device("cpu"), UserCode(None))
    if not under_kineto:
        with ops:
            step(*inputs)
        ops.finish()
        return ops.ops_ms(), 0.0
    with profile(activities=[ProfilerActivity.CPU]) as prof, ops:
        step(*inputs)
    ops.finish()
    inner_us = sum(e.cpu_time_total for e in prof.events()
                   if e.name.startswith("aten::") and e.cpu_parent is not None
                   and e.cpu_parent.name == "PythonDispatchMode")
    return ops.ops_ms(), inner_us / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# kineto_inner.py --threads {args.threads} --batch {args.batch} | torch "
          f"{torch.__version__}; untracked % = (plain − Σ op time) / plain")
    print("| model | plain ms | ref % | ours % | inner % | ours+k % | ours − ref | inner − ref |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        (model_p, input_p, iteration_p), _ = providers(name, "cpu", "stock")
        model = model_p()
        inputs = input_p(batch_size=args.batch)
        step = iteration_p(model)
        for _ in range(10):
            step(*inputs)
        for _ in range(args.rounds):
            plain = plain_ms(step, inputs)
            ref = aten_ms_per_step(step, inputs, 15)
            ours = statistics.median(windows_ms(model, step, inputs)[0] for _ in range(5))
            both = [windows_ms(model, step, inputs, under_kineto=True) for _ in range(3)]
            ours_k = statistics.median(b[0] for b in both)
            inner = statistics.median(b[1] for b in both)
            pct = [100 * (plain - ms) / plain for ms in (ref, ours, inner, ours_k)]
            print(f"| {name} | {plain:.2f} | {pct[0]:+.1f} | {pct[1]:+.1f} | {pct[2]:+.1f} | "
                  f"{pct[3]:+.1f} | {pct[1] - pct[0]:+.1f} | {pct[2] - pct[0]:+.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()

"""Where a profile's seconds go, stage by stage, in iterations of the user's own loop.

Issue 12's bar is a whole ``%skyline`` (profile + samples) within 30 uninstrumented iterations of
the user's batch; on a GPU (BENCHMARKS.md, session 11) profiles cost 42–475. For each model and
batch: the user's plain loop (``cuda_headline.plain_loop_ms``: a fresh model, 10 warm-up steps,
the median of 30), then ``--repeats`` profiles with a progress callback that records when each
stage starts. A stage's cost is the time to the next stage's start; printed per stage kind
(numbers stripped: "timing each op (run N)" adds up over N) as the median over the profiles, in
milliseconds and in plain iterations, after one line per profile: its whole cost in plain
iterations (over the mean of a plain loop right before it and one right after) and the batch
sizes it sampled (the cost bar is about the whole; whether a profile
went beyond 2× the batch decides most of it on a CPU, where a 4× sample costs 12–15 of the
user's iterations). ``--threads`` sets torch's thread count first (default: torch's own).
``--cprofile K`` also prints the K functions with the most own time over one more profile of
each model (where the host spends it); ``--steps`` the user's iterations each stage ran, by the
profiler's function that ran them and their batch size (a sample's peak: its ``measured_step``
at the user's batch first, then at its own; its timing: ``timed_chunk``). ``--load`` runs it
all beside one spinning process (``spinner.py``; ``--apart``: in a session of its own).
``--scale bench`` profiles ``prediction_accuracy.py``'s sizes, whose sampling-cost column issue
15's bar is read off (an H100's LSTM of width 1024 sampled 2× its profile in session 26).

    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cuda --models mlp:32 cnn:32
    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cpu --models cnn:16 --repeats 3
    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cpu --threads 1 --models lstm:8
    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cpu --steps --models transformer:16
    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cpu --models cnn:16 --load
    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cpu --models convnext:16 bert:8
    PYTHONPATH=$PWD python3 benchmarks/stage_cost.py --device cuda --scale bench --models lstm:32
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import itertools
import pstats
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuda_headline import plain_loop_ms
from example_providers import named_providers
from spinner import spinning

import skyline_nb
from skyline_nb.profiler.providers import Trial
from skyline_nb.report import Report

TIMING_OPS = "timing each op (run N)"  # a stage kind: its runs add up


def stage_costs(
    provs: tuple, batch: int, device: str, predict: bool = True,
    steps: dict[tuple[str, str, int], list[float]] | None = None,
) -> tuple[dict[str, float], float, Report]:
    """One profile: ms per stage kind (starts to the next start), the whole wall time in ms,
    and the report; with ``steps``, every iteration of the user's step adds its wall ms there
    under (stage kind, the profiler's function that ran it, its batch size)."""
    marks: list[tuple[str, float]] = []
    with stepped(steps, marks) if steps is not None else contextlib.nullcontext():
        report = skyline_nb.profile(
            *provs,
            batch_size=batch,
            device=device,
            predict=predict,
            progress=lambda p: marks.append((p.stage, 1000 * p.elapsed_s)),
        )
    costs: dict[str, float] = defaultdict(float)
    for (stage, began), (_, ended) in itertools.pairwise(marks):
        costs[re.sub(r"\d+", "N", stage)] += ended - began
    return costs, marks[-1][1], report


@contextlib.contextmanager
def stepped(steps: dict[tuple[str, str, int], list[float]],
            marks: list[tuple[str, float]]) -> Iterator[None]:
    """``Trial.step`` timed and filed under (stage kind, caller, batch size) meanwhile."""
    original = Trial.step

    def step(trial: Trial) -> object:
        began = time.perf_counter()
        try:
            return original(trial)
        finally:
            ms = 1000 * (time.perf_counter() - began)
            stage = re.sub(r"\d+", "N", marks[-1][0]) if marks else ""
            rows = trial.input_tensors[0].shape[0] if trial.input_tensors[0].dim() else 0
            steps.setdefault((stage, sys._getframe(1).f_code.co_name, rows), []).append(ms)

    Trial.step = step
    try:
        yield
    finally:
        Trial.step = original


def own_time(provs: tuple, batch: int, device: str, top: int) -> str:
    """The ``top`` functions with the most own time over one profile."""
    profiler = cProfile.Profile()
    profiler.runcall(skyline_nb.profile, *provs, batch_size=batch, device=device)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--models",
        nargs="+",
        default=["mlp:32", "cnn:32", "transformer:32", "lstm:32"],
        help="model:batch pairs",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", choices=("stock", "bench"), default="stock",
                        help="the examples as shipped, or prediction_accuracy.py's sizes")
    parser.add_argument("--cprofile", type=int, default=0, metavar="K")
    parser.add_argument("--steps", action="store_true",
                        help="each stage's iterations of the user's step, by caller and size")
    parser.add_argument("--load", action="store_true", help="one competing spinning process")
    parser.add_argument("--threads", type=int, default=None, help="default: torch's own")
    parser.add_argument("--apart", action="store_true",
                        help="with --load: the competitor in a session of its own")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    with spinning(args.apart) if args.load else contextlib.nullcontext():
        for pair in args.models:
            stage_report(pair, args.device, args.repeats, args.cprofile, args.scale,
                         args.steps)


def stage_report(pair: str, device: str, repeats: int, cprofile: int, scale: str,
                 steps: bool = False) -> None:
    """Print one model:batch pair's cost by stage (median over ``repeats`` profiles); with
    ``steps``, the user's iterations each stage ran, by caller and batch size."""
    name, size = pair.split(":")
    batch = int(size)
    provs, label = named_providers(name, device, scale)
    stage_costs(provs, batch, device)  # a process's first profile: imports, caches
    # a plain loop before each profile and one after the last: each profile's cost is read
    # against the mean of the loops around it (the host's pace moves by a third within
    # seconds here, BENCHMARKS.md, session 42: one loop before them all read the same code's
    # ConvNeXt at 25, 40 and 48 iterations)
    plains = [plain_loop_ms(provs, batch, device)]
    logs: list[dict[tuple[str, str, int], list[float]]] = [{} for _ in range(repeats)]
    runs = []
    for log in logs:
        runs.append(stage_costs(provs, batch, device, steps=log if steps else None))
        plains.append(plain_loop_ms(provs, batch, device))
    around = [(a + b) / 2 for a, b in itertools.pairwise(plains)]
    costs = [wall / plain for (_, wall, _), plain in zip(runs, around, strict=True)]
    plain = statistics.median(plains)
    print(
        f"\n{name}({label})@{batch} on {device}: plain loop {plain:.2f} ms (median of "
        f"{len(plains)}, {min(plains):.2f}-{max(plains):.2f}); profile "
        f"{statistics.median(wall for _, wall, _ in runs):.0f} ms = "
        f"{statistics.median(costs):.1f} iterations (median of {len(runs)}, each over the "
        "loops around it)"
    )
    for (_costs, _wall, report), cost, (a, b) in zip(runs, costs, itertools.pairwise(plains),
                                                      strict=True):
        sizes = ",".join(str(s.batch_size) for s in report.samples)
        print(f"  profile: {cost:5.1f} it, samples {sizes}; the loops around it "
              f"{a:.2f} / {b:.2f} ms")
    for kind in dict.fromkeys(k for costs, _, _ in runs for k in costs):
        ms = statistics.median(costs.get(kind, 0.0) for costs, _, _ in runs)
        print(f"  {ms:9.1f} ms {ms / plain:7.1f} it  {kind}")
    if steps:
        print("  the user's step, median over the profiles: iterations run, their cost in plain "
              "iterations, at stage / by / batch size")
        for key in dict.fromkeys(k for log in logs for k in log):
            count = statistics.median(len(log.get(key, [])) for log in logs)
            ms = statistics.median(sum(log.get(key, [])) for log in logs)
            print(f"  {count:5.1f} x {ms / plain:6.1f} it  {key[0]} / {key[1]} / {key[2]}")
    if cprofile:
        print(own_time(provs, batch, device, cprofile))

if __name__ == "__main__":
    main()

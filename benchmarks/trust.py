"""Are the numbers a user sees right, at the user's thread count, quiet and under load?

For each example model and batch size, each ROUND measures, in this process: a plain training
loop's median iteration at the user's batch (the truth a user lives by: wall clock, a warm model,
``--plain`` iterations), then ``skyline_nb.profile`` (wall time, iteration, untracked time),
then plain-loop medians at held-out sizes 1.5×, 2×, 3× and 4× the batch, which the profile's
time line must predict. With ``--load`` one competing process spins on a core throughout, in
this script's session, or with ``--apart`` in a session of its own, as a notebook kernel meets
any other busy program (``spinner.py``).

Printed per model and batch (medians over rounds, plus the worst single profile):
- iter %: the profile's iteration vs the plain loop's median (bar: ±10 % quiet, ±15 % loaded;
  no single profile beyond 20 % / 25 %);
- untracked %: iteration − Σ op times, as % of the iteration; untracked ref %: the same share
  of the plain loop by torch's own profiler, outside its top-level aten ops (``kineto_ops.py``:
  a step's Python and autograd engine run outside every op, ~20–25 % of the example MLP's
  0.8 ms step on the session-30 host); untracked err: their difference, in points (bar ±10);
- pred %: mean |error| of the predicted time at the held-out sizes vs the plain loops (≤ 8 %);
- mem %: mean |error| of the predicted peak vs a fresh model's measured peak at those sizes;
- noise %: how much the truth itself moves, (max − min) / median of the plain-loop medians over
  the rounds, averaged over the user's batch and the held-out sizes: a floor no error above can
  be judged below (a shared host can move a plain loop's median by 10–40 % between rounds);
- cost: the profile's wall time in plain iterations of the user's batch (≤ 30);
- impossible: values ``report_checks.impossible_values`` finds (must be none);
- bracket %: the profile's iteration vs the mean of the plain loop before it and one more right
  after it, and drift %: how far that second loop moved from the first. Their median is the
  truth at the profile's moment as near as two loops can bracket it (a shared host's pace moves
  ±20 % within seconds, BENCHMARKS.md, session 17); a bracket % far from 0 where the drift is
  small is the profile's, not the host's;
- moment %: the profile's iteration vs the plain loop's own warm step, ``MOMENT`` iterations of
  it run inside the profile right after the headline's timed steps (``moment_after_headline``),
  tens of milliseconds from them rather than the seconds a bracket spans: what is left of a
  bias once the host's drift is out. Its iterations are taken off the cost and the wall time.

    python benchmarks/trust.py                      # default threads, quiet
    python benchmarks/trust.py --threads 1 --load   # one thread, a competing process
    python benchmarks/trust.py --load --apart        # the competitor in a session of its own
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import example_providers
from kineto_ops import aten_ms_per_step
from spinner import described, spinning

HELD_OUT = (1.5, 2.0, 3.0, 4.0)
WARMUP = 8
# ... and at least this long: a CPU runs a short step slowly for 100 ms and more after a pause
# (building the model is one), which a loop that has run for a while no longer does (the
# example MLP's 8 + 15 iterations after its build lay in that stretch; BENCHMARKS.md, session 51)
WARMUP_MS = 300.0
MOMENT = 7


def warm_step(providers: tuple, batch: int) -> tuple[Callable[..., Any], tuple]:
    """A fresh model's step and inputs after ``WARMUP`` steps and ``WARMUP_MS``, as a training
    loop that has run for a while has them."""
    model_provider, input_provider, iteration_provider = providers
    step = iteration_provider(model_provider())
    inputs = input_provider(batch)
    for _ in range(WARMUP):  # fewer left first-touch page faults in the median (CNN +25 %)
        step(*inputs)
    end = time.perf_counter() + WARMUP_MS / 1e3
    while time.perf_counter() < end:
        step(*inputs)
    return step, inputs


def median_ms(step: Callable[..., Any], inputs: tuple, iterations: int) -> float:
    """Median wall time of single iterations, as a training loop runs them."""
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        step(*inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def plain_median(providers: tuple, batch: int, iterations: int) -> float:
    """Median wall time of single iterations of a warm model."""
    return median_ms(*warm_step(providers, batch), iterations)


@contextlib.contextmanager
def moment_after_headline(step: Callable[..., Any], inputs: tuple) -> Iterator[dict[str, float]]:
    """Within it, a profile's first timed steps (level 1's headline, ``iteration.time_steps``)
    are followed at once by ``MOMENT`` iterations of the plain ``step``: their median ("ms")
    and the wall time they took ("spent_ms") land in the dict yielded."""
    from skyline_nb.profiler import iteration

    seen: dict[str, float] = {}
    timed = iteration.time_steps

    def then_plain(*args: Any, **kwargs: Any) -> Any:
        timing = timed(*args, **kwargs)
        if not seen:
            start = time.perf_counter()
            seen["ms"] = median_ms(step, inputs, MOMENT)
            seen["spent_ms"] = (time.perf_counter() - start) * 1e3
        return timing

    iteration.time_steps = then_plain
    try:
        yield seen
    finally:
        iteration.time_steps = timed


def fresh_peak(providers: tuple, batch: int) -> int:
    from skyline_nb.profiler.prepare import measure_iteration

    return measure_iteration(*providers, batch, "cpu").peak_bytes


def one_round(providers: tuple, batch: int, iterations: int) -> dict[str, float]:
    import skyline_nb
    from skyline_nb.report_checks import impossible_values

    step, inputs = warm_step(providers, batch)
    truth = median_ms(step, inputs, iterations)
    reference = 100 * (1 - aten_ms_per_step(step, inputs, iterations) / truth)
    with moment_after_headline(step, inputs) as moment:
        start = time.perf_counter()
        report = skyline_nb.profile(*providers, batch_size=batch, device="cpu")
        wall_ms = (time.perf_counter() - start) * 1e3 - moment.get("spent_ms", 0.0)
    del step, inputs
    after = plain_median(providers, batch, iterations)
    row = {
        "iter": 100 * (report.iteration_ms / truth - 1),
        "bracket": 100 * (report.iteration_ms / ((truth + after) / 2) - 1),
        "drift": 100 * (after / truth - 1),
        "moment": 100 * (report.iteration_ms / moment["ms"] - 1) if moment else float("nan"),
        "untracked": 100 * report.untracked_ms / report.iteration_ms,
        "untracked ref": reference,
        "untracked err": 100 * report.untracked_ms / report.iteration_ms - reference,
        "cost": wall_ms / truth,
        "wall": wall_ms / 1e3,
        "impossible": float(len(impossible_values(report))),
        "pred": float("nan"),
        "mem": float("nan"),
        "truths": {batch: truth},
    }
    models = report.models
    if models is not None and models.time is not None and models.can_manipulate:
        sizes = [round(f * batch) for f in HELD_OUT]
        row["truths"].update({n: plain_median(providers, n, iterations) for n in sizes})
        errors = [abs(models.predict_iteration_ms(n) / row["truths"][n] - 1) for n in sizes]
        memory = [abs(models.predict_peak_bytes(n) / fresh_peak(providers, n) - 1)
                  for n in sizes]
        row["pred"] = 100 * statistics.mean(errors)
        row["mem"] = 100 * statistics.mean(memory)
    return row


def noise(rows: list[dict]) -> str:
    """Mean over sizes of (max − min) / median of the plain loops' medians over the rounds."""
    sizes = set.intersection(*(set(r["truths"]) for r in rows))
    spreads = []
    for n in sorted(sizes):
        values = [r["truths"][n] for r in rows]
        spreads.append((max(values) - min(values)) / statistics.median(values))
    return f"{100 * statistics.mean(spreads):.1f}"


def summary(rows: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in rows if r[key] == r[key]]  # drop nan
    if not values:
        return "off"
    worst = max(values, key=abs)
    return f"{statistics.median(values):+.1f} ({worst:+.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(example_providers.MODELS),
                        choices=example_providers.MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[16, 32])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="default: torch's own")
    parser.add_argument("--plain", type=int, default=15, help="iterations per plain loop")
    parser.add_argument("--load", action="store_true", help="one competing spinning process")
    parser.add_argument("--apart", action="store_true",
                        help="with --load: the competitor in a session of its own")
    args = parser.parse_args()
    import torch

    import skyline_nb

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads, load={described(args.apart) if args.load else 'none'}")
    print("| model | batch | iter % | untracked % | untracked ref % | untracked err | pred % "
          "| mem % | noise % | cost (iters) | wall s | impossible | bracket % | drift % "
          "| moment % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with spinning(args.apart) if args.load else contextlib.nullcontext():
        for name in args.models:
            providers, _ = example_providers.providers(name, "cpu", "stock")
            skyline_nb.profile(*providers, batch_size=8, device="cpu")  # warm the process
            for batch in args.batches:
                rows = [one_round(providers, batch, args.plain) for _ in range(args.rounds)]
                print(f"| {name} | {batch} | {summary(rows, 'iter')} | "
                      f"{summary(rows, 'untracked')} | {summary(rows, 'untracked ref')} | "
                      f"{summary(rows, 'untracked err')} | {summary(rows, 'pred')} | "
                      f"{summary(rows, 'mem')} | {noise(rows)} | {summary(rows, 'cost')} | "
                      f"{summary(rows, 'wall')} | {int(sum(r['impossible'] for r in rows))} | "
                      f"{summary(rows, 'bracket')} | {summary(rows, 'drift')} | "
                      f"{summary(rows, 'moment')} |", flush=True)


if __name__ == "__main__":
    main()

"""Training steps as users write them (``tests/unit/user_models.py``; with ``--hf``, Hugging Face
models from small configs, ``tests/unit/hf_models.py``): what each profile shows, against the
user's own plain loop and a plain measurement of the peak.

For each model, at its input provider's default batch, each ROUND: a plain loop's median
iteration (warm model, wall clock), then ``skyline_nb.profile``, then a plain loop at 2× the
batch. Printed per model (medians over rounds, worst in brackets where it matters):
- iter %: the headline vs the plain loop; untracked %: iteration − Σ op times;
- other %: the memory remainder ("other") as % of the peak (negative: the instrumented
  iteration held more than the plain one, which the report explains);
- mem %: largest |error| of a sample's peak above the batch vs a fresh plain measurement
  (exact = 0.00);
- 2× %: the predicted time at 2× the batch vs the plain loop there ("off": dragging was off);
- cost: the profile's wall time in plain iterations; impossible: ``impossible_values``;
- warnings: how many the report carried.

    python benchmarks/user_steps.py --rounds 3
    python benchmarks/user_steps.py --rounds 3 --threads 1
    python benchmarks/user_steps.py --rounds 3 --hf
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit")]

PLAIN = 11


def one_round(providers: tuple, batch: int) -> dict[str, float]:
    from trust import plain_median

    import skyline_nb
    from skyline_nb.categories import Category
    from skyline_nb.profiler.prepare import measure_iteration
    from skyline_nb.report_checks import impossible_values

    truth = plain_median(providers, batch, PLAIN)
    start = time.perf_counter()
    report = skyline_nb.profile(*providers, batch_size=batch, device="cpu")
    wall_ms = (time.perf_counter() - start) * 1e3
    memory = [abs(s.peak_bytes / measure_iteration(*providers, s.batch_size, "cpu").peak_bytes
                  - 1) for s in report.samples if s.batch_size > batch]
    models = report.models
    double = float("nan")
    if models is not None and models.time is not None and models.can_manipulate:
        plain = plain_median(providers, 2 * batch, PLAIN)
        double = 100 * (models.predict_iteration_ms(2 * batch) / plain - 1)
    return {
        "iter": 100 * (report.iteration_ms / truth - 1),
        "untracked": 100 * report.untracked_ms / report.iteration_ms,
        "other": 100 * report.categories[Category.UNTRACKED] / report.peak_bytes,
        "mem": 100 * max(memory, default=0.0),
        "double": double,
        "cost": wall_ms / truth,
        "impossible": float(len(impossible_values(report))),
        "warnings": float(len(report.warnings)),
    }


def median(rows: list[dict[str, float]], key: str, worst: bool = False) -> str:
    values = [r[key] for r in rows if r[key] == r[key]]  # drop nan
    if not values:
        return "off"
    text = f"{statistics.median(values):+.1f}"
    return f"{text} ({max(values, key=abs):+.1f})" if worst else text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="default: torch's own")
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--hf", action="store_true", help="the Hugging Face models instead")
    args = parser.parse_args()
    import torch

    if args.hf:
        import hf_models as catalog
    else:
        import user_models as catalog

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {torch.get_num_threads()} "
          "threads")
    print("| model | batch | iter % | untracked % | other % | mem % | 2× % | cost (iters) "
          "| impossible | warnings |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models or list(catalog.ALL):
        providers = catalog.ALL[name]()
        batch = inspect.signature(providers[1]).parameters["batch_size"].default
        rows = [one_round(providers, batch) for _ in range(args.rounds)]
        print(f"| {name} | {batch} | {median(rows, 'iter', True)} | "
              f"{median(rows, 'untracked', True)} | {median(rows, 'other')} | "
              f"{max(r['mem'] for r in rows):.2f} | {median(rows, 'double', True)} | "
              f"{median(rows, 'cost')} | {int(sum(r['impossible'] for r in rows))} | "
              f"{median(rows, 'warnings')} |", flush=True)


if __name__ == "__main__":
    main()

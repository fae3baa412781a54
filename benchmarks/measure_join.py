"""What "Measure at N" joining the samples does to the predictions a user drags to next.

A user drags to 8× their batch, beyond the samples, and clicks "Measure at N"; the measurement
joins the time curve (``skyline_nb/measurement.py``, ``models/joined.py``). Each round: profile
at the start, measure at ``--at`` × the start as the widget does (``measure_iteration``, a fresh
model), join it, then time plain loops (``trust.plain_median``) at the ``--held-out`` sizes
(× the start: between the samples and N, and beyond N), and compare both curves' predictions
there with them. Printed per model: the samples, whether N joined and how (the curve kept, N
within its tolerance; refitted, by its shape; or a straight piece on from the largest sample),
and the mean |error| % at the held-out sizes before and after, median over the rounds; with the
plain loop at the start before and after the round (the host's pace, which moves every number
here).

    PYTHONPATH=$PWD python benchmarks/measure_join.py --models cnn lstm --starts 8 16
    PYTHONPATH=$PWD python benchmarks/measure_join.py --at 8 4    # then a second, between
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import example_providers
from trust import plain_median

from skyline_nb.models.curve import SHAPES


def one_round(providers: tuple, start: int, at: list[float], held_out: list[float],
              plain: int) -> dict:
    """One profile, the measurements in turn (each joining what the last left), the held-out
    truths; the numbers of the row."""
    import skyline_nb
    from skyline_nb.measurement import measured
    from skyline_nb.profiler.prepare import measure_iteration
    from skyline_nb.report_checks import impossible_values

    pace = [plain_median(providers, start, plain)]
    report = skyline_nb.profile(*providers, batch_size=start)
    row = {"samples": [s.batch_size for s in report.samples], "joined": None, "impossible": 0}
    if not report.models.can_manipulate:
        return {**row, "how": f"off: {report.models.reason}"}
    after, hows, offs = report, [], []
    for size in (round(m * start) for m in at):
        after, value = measured(after, measure_iteration(*providers, size))
        row["impossible"] += len(impossible_values(after))
        time = after.models.time
        hows.append(value["not_joined"] or ("kept" if value["curve_kept"] else
                                            "piece" if time.pieces else time.shape))
        offs.append(100 * (value["iteration_ms"] / value["predicted_ms"] - 1))
    row["joined"] = any(how in ("kept", "piece", *SHAPES) for how in hows)
    row["how"] = " then ".join(hows)
    truths = {n: plain_median(providers, n, plain) for n in (round(h * start) for h in held_out)}
    pace.append(plain_median(providers, start, plain))
    for name, models in (("before", report.models), ("after", after.models)):
        row[name] = {n: 100 * (models.predict_iteration_ms(n) / t - 1) for n, t in truths.items()}
    row["pace"] = pace
    row["measured_off"] = offs
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["cnn", "lstm", "transformer"])
    parser.add_argument("--starts", nargs="+", type=int, default=[8, 16])
    parser.add_argument("--at", nargs="+", type=float, default=[8.0],
                        help="Measure at these × the start, in turn")
    parser.add_argument("--held-out", nargs="+", type=float, default=[3, 4, 6, 12])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plain", type=int, default=9, help="iterations per plain loop")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| model | start | samples | N | joined | how | N measured vs predicted % "
          "| before mean % | after mean % | per size before → after % | pace ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        providers, _ = example_providers.named_providers(name)
        for start in args.starts:
            rows = [one_round(providers, start, args.at, args.held_out, args.plain)
                    for _ in range(args.rounds)]
            sizes = ", ".join(str(round(m * start)) for m in args.at)
            print(table_row(name, start, sizes, rows), flush=True)


def table_row(name: str, start: int, size: str, rows: list[dict]) -> str:
    """Medians over the rounds that joined or refused (a profile with dragging off has no
    curve to compare), and what each round did."""
    done = [r for r in rows if r["joined"] is not None]
    samples = sorted({n for r in rows for n in r["samples"]})
    hows = ", ".join(r["how"] if r["joined"] is not None else "drag off" for r in rows)
    joined = f"{sum(bool(r['joined']) for r in done)} of {len(rows)}"
    if not done:
        return f"| {name} | {start} | {samples} | {size} | {joined} | {hows} | | | | | |"

    def mean_abs(r: dict, key: str) -> float:
        return statistics.mean(abs(v) for v in r[key].values())

    sizes = list(done[0]["before"])
    per_size = "; ".join(
        f"{n}: {statistics.median(r['before'][n] for r in done):+.1f} → "
        f"{statistics.median(r['after'][n] for r in done):+.1f}" for n in sizes)
    pace = ", ".join(f"{r['pace'][0]:.1f}→{r['pace'][1]:.1f}" for r in done)
    off = " / ".join(f"{statistics.median(r['measured_off'][k] for r in done):+.1f}"
                     for k in range(len(done[0]["measured_off"])))
    impossible = sum(r["impossible"] for r in done)
    return (f"| {name} | {start} | {samples} | {size} | {joined} | {hows} | {off} "
            f"| {statistics.median(mean_abs(r, 'before') for r in done):.1f} "
            f"| {statistics.median(mean_abs(r, 'after') for r in done):.1f} | {per_size} "
            f"| {pace} |" + (f" {impossible} impossible values" if impossible else ""))


if __name__ == "__main__":
    main()

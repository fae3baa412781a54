"""How well do the performance curves predict batch sizes they were not fitted to?

For each model (MLP, CNN, Transformer, LSTM) and starting batch size (8, 16), every ROUND runs
``profile(predict=False)`` and ``profile(predict=True)`` (alternating which goes first) and
then measures each held-out batch size once, uninstrumented (level 1, full precision), so slow
phases of a shared machine hit every quantity alike. After ``--repeats`` rounds:

- truth at a held-out size = the median of its measurements; spread = (max − min) / median, the
  noise floor no prediction can be judged below;
- "median fit": curves through the per-size medians of the product's samples (what the models
  predict once measurement noise is averaged out);
- "one profile": each round's own ``report.models`` (what a user gets from a single profile),
  its mean |error| per round, median over rounds;
- "paired": the same, each profile against its own round's measurements, taken within seconds
  after it, as a user runs their loop after profiling (the medians over rounds span minutes,
  over which a shared host's pace moves: BENCHMARKS.md, session 54);
- cost: median over rounds of (wall(predict=True) − wall(predict=False)) / wall(predict=False).
- off: how many of the profiles' own curves refused to predict (the user sees dragging off);
  their samples still count in the median fit, which is judged unless it refuses too;
- shape: the curve's growth against the host's pace. Each round measures the start before the
  first held-out size and again after each one, so every held-out size has the start right
  before and right after it: truth ratio = T(n) / mean of those two (median over rounds), and
  shape % = (fit(n) / fit(start)) / truth ratio − 1. A shared host's pace moves by a third
  between a round's held-out sizes (BENCHMARKS.md, session 42) and takes every absolute error
  with it; a ratio measured within a second keeps only what the curve itself gets wrong. On a
  CPU by default; on a GPU with ``--shape`` (the start's timings would take a lent GPU's
  minutes from the rows themselves, ``cuda_all.sh``).

Held-out sizes are 1.5, 3, 4, 6 and 8 × the start on CPU; on CUDA 1.25, 2.5, 5, 10 and 14 ×
(up to 16 × in issue 15: a GPU's samples are the start times powers of two and, since session
23, halfway between them, 1.5, 3, 6, 12 ×, which sessions 11–22 held out); ``--held-out``
chooses others; minus sizes that were sampled;
a size beyond the fitted models' drag range (``max_batch_size``: 2× the largest sample when the
time is flat) is left out and listed, since the widget shows no prediction there. Bars
(issues 4 and 15) — CPU: time mean ≤ 5 %, memory mean ≤ 1 %, sampling ≤ 1.5× the profile;
GPU: time ≤ 5 % (goal 2 %), memory ≤ 1 %.

Clock: ``--clock wall`` (default) is what the profiler reports. ``--clock cpu`` times level 1
with this process's CPU time instead (with ``--threads 1`` the same as the wall clock on an idle
machine): on a shared machine other processes stretch wall-clock iterations by up to 2×, which
hides how well a line fits; CPU time keeps the model's own work. Sampling cost is wall time in
both. "upper pair" columns: the line through the two largest samples instead of least squares,
for curves that bend upward (a peak is a max over phases, so it is convex in the batch).

Sizes: ``--scale bench`` (default) sizes the models so that an iteration at the starting batch
is tens of milliseconds on one CPU core (the stock examples' MLP is 2 ms: noise and fixed
overheads, not the batch, would decide its time), and GPU-bound widths on CUDA;
``--scale stock`` uses the example providers unchanged.

    python benchmarks/prediction_accuracy.py --threads 1 --repeats 3
    python benchmarks/prediction_accuracy.py --scale stock --models mlp cnn --starts 8
    PYTHONPATH=$PWD python3 benchmarks/prediction_accuracy.py --device cuda --repeats 3
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from example_providers import MODELS, providers

from skyline_nb.models.performance import PerformanceModels
from skyline_nb.report import Sample

# × the start (issue 15: up to 8× it on CPU, 16× on a GPU), sizes no plan samples
HELD_OUT = {"cpu": (1.5, 3.0, 4.0, 6.0, 8.0), "cuda": (1.25, 2.5, 5.0, 10.0, 14.0)}
BARS = {"cpu": (5.0, 1.0), "cuda": (5.0, 1.0)}  # mean time %, mean memory % (issue 15)
SAMPLING_BAR = 1.5


@dataclass
class Row:
    model: str
    start: int
    size: str = ""
    samples: list[int] = field(default_factory=list)
    held_out: list[int] = field(default_factory=list)
    beyond: list[int] = field(default_factory=list)  # held-out sizes past the drag range
    time_errors: list[float] = field(default_factory=list)  # median fit, signed %, per size
    shape_errors: list[float] = field(default_factory=list)  # its growth over the start's, %
    one_profile_shape: float = float("nan")  # as one_profile_time, of the growth
    memory_errors: list[float] = field(default_factory=list)
    upper_time_errors: list[float] = field(default_factory=list)  # line through top 2
    upper_memory_errors: list[float] = field(default_factory=list)
    one_profile_time: float = float("nan")  # median over rounds of a round's mean |error| %
    paired_time: float = float("nan")  # as one_profile_time, against its own round's truths
    spread: list[float] = field(default_factory=list)  # per held-out size, %
    sample_spread: list[float] = field(default_factory=list)  # per sample size, %
    profile_s: float = 0.0
    sampling_s: float = 0.0
    ratio: float = float("nan")
    start_ms: float = float("nan")
    r2_time: float = float("nan")
    reason: str | None = None  # why the median fit refuses to predict
    refused: list[str] = field(default_factory=list)  # per profile whose own models refused
    profiles: int = 0  # with predictions
    raw: dict[str, Any] = field(default_factory=dict)


def cpu_clock_device(torch_device: Any) -> Any:
    """A CPU device whose level-1 timer reads this process's CPU time (see ``--clock``)."""
    from skyline_nb.profiler.device import Device, Timer

    class ProcessTimer(Timer):
        def start(self) -> None:
            self._start = time.process_time_ns()

        def stop(self) -> None:
            self._stop = time.process_time_ns()

    class CPUClockDevice(Device):
        def timer(self) -> Timer:
            return ProcessTimer()

    return CPUClockDevice(torch_device)


def upper_pair(samples: list[Sample]) -> tuple[Callable[[int], float], Callable[[int], float]]:
    """Time and memory lines through the two largest samples."""
    (x0, t0, m0), (x1, t1, m1) = ((s.batch_size, s.iteration_ms, s.peak_bytes)
                                  for s in samples[-2:])
    return (lambda x: t0 + (t1 - t0) * (x - x0) / (x1 - x0),
            lambda x: m0 + (m1 - m0) * (x - x0) / (x1 - x0))


def median_sample(runs: list[Sample]) -> Sample:
    """Median time and peak; the peak per phase where every run has the same phases."""
    phases = runs[0].peak_by_phase
    same = all(s.peak_by_phase.keys() == phases.keys() for s in runs)
    return Sample(runs[0].batch_size, statistics.median(s.iteration_ms for s in runs),
                  int(statistics.median(s.peak_bytes for s in runs)), {},
                  {p: int(statistics.median(s.peak_by_phase[p] for s in runs)) for p in phases}
                  if same else {})


def spread(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def mean_abs(values: list[float]) -> float:
    return sum(abs(v) for v in values) / len(values) if values else float("nan")


def max_abs(values: list[float]) -> float:
    return max((abs(v) for v in values), default=float("nan"))


def relative(predicted: float, actual: float) -> float:
    return 100.0 * (predicted - actual) / actual


def run_one(name: str, start: int, device: Any, scale: str, repeats: int,
            factors: tuple[float, ...], shape: bool = True) -> Row:
    """``repeats`` interleaved rounds (see the module docstring) for one model and start,
    held out at ``factors`` × the start (less the sizes the first profile sampled); ``shape``:
    the start timed beside each held-out size too."""
    import skyline_nb
    from skyline_nb.profiler.prepare import measure_iteration

    provs, label = providers(name, device.kind, scale)
    row = Row(name, start, label)
    walls: dict[bool, list[float]] = {False: [], True: []}
    reports = []
    held: dict[int, list[Sample]] = {}
    ratios: dict[int, list[float]] = {}  # T(n) / the start's beside it, per round
    for round_ in range(repeats):
        for predict in (False, True) if round_ % 2 == 0 else (True, False):
            began = time.perf_counter()
            report = skyline_nb.profile(*provs, batch_size=start, device=device,
                                        predict=predict)
            walls[predict].append(time.perf_counter() - began)
            if predict:
                reports.append(report)
        if not reports[-1].models.can_manipulate:  # the user sees dragging off: counted
            row.refused.append(reports[-1].models.reason or "")
        if not row.held_out:
            sampled = {s.batch_size for s in reports[0].samples}
            row.held_out = sorted({round(start * f) for f in factors} - sampled)
        order = row.held_out if round_ % 2 == 0 else row.held_out[::-1]
        before = measure_iteration(*provs, start, device).iteration_ms if shape else 0.0
        for batch in order:
            held.setdefault(batch, []).append(measure_iteration(*provs, batch, device).sample())
            if shape:
                after = measure_iteration(*provs, start, device).iteration_ms
                ratios.setdefault(batch, []).append(
                    held[batch][-1].iteration_ms / ((before + after) / 2))
                before = after
    row.profile_s = statistics.median(walls[False])
    row.sampling_s = statistics.median(t - f for t, f in zip(walls[True], walls[False],
                                                              strict=True))
    row.ratio = statistics.median((t - f) / f for t, f in zip(walls[True], walls[False],
                                                               strict=True))
    row.start_ms = statistics.median(r.iteration_ms for r in reports)
    row.profiles = len(reports)
    by_size: dict[int, list[Sample]] = {}
    for report in reports:
        for sample in report.samples:
            by_size.setdefault(sample.batch_size, []).append(sample)
    samples = [median_sample(runs) for _, runs in sorted(by_size.items())]
    row.samples = [s.batch_size for s in samples]
    row.sample_spread = [spread([r.iteration_ms for r in by_size[b]]) for b in row.samples]
    fit = PerformanceModels.from_samples(
        row.samples, [s.iteration_ms for s in samples], [s.peak_bytes for s in samples],
        device.capacity_bytes(), None, peak_phases=[s.peak_by_phase for s in samples],
    )
    row.r2_time = fit.time.r2
    truth = {b: median_sample(runs) for b, runs in held.items()}
    growth = {b: statistics.median(values) for b, values in ratios.items()}
    trusted = [r for r in reports if r.models.can_manipulate]

    def one_profile(error: Callable[[PerformanceModels, int], float]) -> float:
        return statistics.median(
            mean_abs([error(r.models, b) for b in row.held_out if b <= r.models.max_batch_size()])
            for r in trusted) if trusted else float("nan")

    row.one_profile_time = one_profile(
        lambda models, b: relative(models.predict_iteration_ms(b), truth[b].iteration_ms))
    paired = [mean_abs([relative(r.models.predict_iteration_ms(b), held[b][i].iteration_ms)
                        for b in row.held_out if b <= r.models.max_batch_size()])
              for i, r in enumerate(reports) if r.models.can_manipulate]
    row.paired_time = statistics.median(paired) if paired else float("nan")
    if shape:
        row.one_profile_shape = one_profile(lambda models, b: relative(
            models.predict_iteration_ms(b) / models.predict_iteration_ms(start), growth[b]))
    row.raw = {
        "walls": {str(k): v for k, v in walls.items()},
        "samples": [[[s.batch_size, s.iteration_ms, s.peak_bytes] for s in r.samples]
                    for r in reports],
        "held_out": {b: [[s.iteration_ms, s.peak_bytes] for s in runs]
                     for b, runs in held.items()},
        "ratios": ratios,
    }
    if not fit.can_manipulate:  # the median fit refuses; the profiles' own curves still count
        row.reason = fit.reason
        return row
    upper_time, upper_memory = upper_pair(samples)
    top = fit.max_batch_size() if fit.memory is not None else 0
    row.beyond = [b for b in row.held_out if b > top]  # the widget offers no prediction there
    for batch in row.held_out:
        if batch > top:
            continue
        actual = truth[batch]
        row.spread.append(spread([r.iteration_ms for r in held[batch]]))
        row.time_errors.append(relative(fit.predict_iteration_ms(batch), actual.iteration_ms))
        if shape:
            row.shape_errors.append(relative(
                fit.predict_iteration_ms(batch) / fit.predict_iteration_ms(start), growth[batch]))
        row.memory_errors.append(relative(fit.predict_peak_bytes(batch), actual.peak_bytes))
        row.upper_time_errors.append(relative(upper_time(batch), actual.iteration_ms))
        row.upper_memory_errors.append(relative(upper_memory(batch), actual.peak_bytes))
    return row


def header(args: argparse.Namespace, device_name: str) -> str:
    import torch

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return "\n".join([
        "# prediction accuracy of the performance curves",
        f"command: python {shlex.join(sys.argv)}",
        f"date:    {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"machine: {platform.node()} · {platform.machine()} · {os.cpu_count()} CPUs · "
        f"{platform.python_implementation()} {platform.python_version()} · "
        f"torch {torch.__version__} (threads {torch.get_num_threads()}) · "
        f"load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        f"device:  {device_name}",
        f"clock:   {args.clock} (level 1; sampling cost is always wall time)",
        f"rounds:  {args.repeats}, interleaved (profile pair, then every held-out size once)",
        "errors:  (predicted − measured median) / measured median at held-out sizes, % "
        "(median fit: curves through the median samples; 1-prof: one profile's own models, "
        "median over rounds of its mean |error|); spread: (max − min) / median of the held-out "
        "measurements, the noise floor; ratio: (wall(predict) − wall(no predict)) / wall(no "
        "predict), median over rounds",
    ])


def table(rows: list[Row], kind: str) -> str:
    time_bar, memory_bar = BARS[kind]
    lines = [
        "| model | size | start | start ms | samples | held-out | time mean % | time max % | "
        "1-prof time % | paired % | spread % | sample spread % | mem mean % | mem max % | "
        "R² time | profile s | sampling s | ratio | bars | upper pair time / mem mean % | off | "
        "shape mean % | 1-prof shape % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        off = f"{len(r.refused)}/{r.profiles}"
        if r.reason:
            lines.append(f"| {r.model} | {r.size} | {r.start} | {r.start_ms:.1f} | "
                         f"{','.join(map(str, r.samples))} | {','.join(map(str, r.held_out))} "
                         f"| median fit refused: {r.reason} | | {r.one_profile_time:.1f} | "
                         f"{r.paired_time:.1f} |"
                         + " |" * 10 + f" {off} | | {r.one_profile_shape:.1f} |")
            continue
        failed = [what for what, fine in (
            ("time", mean_abs(r.time_errors) <= time_bar),
            ("memory", mean_abs(r.memory_errors) <= memory_bar),
            ("cost", r.ratio <= SAMPLING_BAR),
        ) if not fine]
        lines.append(
            f"| {r.model} | {r.size} | {r.start} | {r.start_ms:.1f} | "
            f"{','.join(map(str, r.samples))} | {','.join(map(str, r.held_out))} | "
            f"{mean_abs(r.time_errors):.1f} | {max_abs(r.time_errors):.1f} | "
            f"{r.one_profile_time:.1f} | {r.paired_time:.1f} | {mean_abs(r.spread):.1f} | "
            f"{mean_abs(r.sample_spread):.1f} | {mean_abs(r.memory_errors):.2f} | "
            f"{max_abs(r.memory_errors):.2f} | {r.r2_time:.4f} | {r.profile_s:.2f} | "
            f"{r.sampling_s:.2f} | {r.ratio:.2f} | "
            f"{'FAIL ' + '+'.join(failed) if failed else 'pass'} | "
            f"{mean_abs(r.upper_time_errors):.1f} / {mean_abs(r.upper_memory_errors):.2f} | "
            f"{off} | {mean_abs(r.shape_errors):.1f} | {r.one_profile_shape:.1f} |"
        )
    lines += ["", "signed time errors % per held-out size, median fit (negative: too little):"]
    for r in rows:
        if r.time_errors:
            judged = [b for b in r.held_out if b not in r.beyond]
            shapes = [f"; shape {g:+.1f}" for g in r.shape_errors] or [""] * len(judged)
            pairs = ", ".join(f"{b}: {e:+.1f} (±{s:.0f}{g})" for b, e, s, g in zip(
                judged, r.time_errors, r.spread, shapes, strict=True))
            beyond = f"; beyond the drag range: {r.beyond}" if r.beyond else ""
            lines.append(f"  {r.model}@{r.start}: {pairs}{beyond}")
    refusals = [(r, reason) for r in rows for reason in r.refused]
    if refusals:
        lines += ["", "profiles whose own curves refused to predict (dragging off):"]
        lines += [f"  {r.model}@{r.start}: {reason}" for r, reason in refusals]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--starts", nargs="+", type=int, default=[8, 16])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--scale", choices=("bench", "stock"), default="bench",
                        help="bench: models sized for stable timings (default); stock: the "
                             "examples as shipped")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads (default 1: on a shared 2-core machine a "
                             "second intra-op thread waits for a busy core, which adds noise)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="level-1 clock on CPU (see the module docstring)")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--shape", action=argparse.BooleanOptionalAction, default=None,
                        help="time the start beside each held-out size for the shape columns "
                             "(default: on a CPU; a lent GPU's minutes go to the rows first)")
    parser.add_argument("--held-out", nargs="+", type=float, metavar="FACTOR",
                        help="held-out sizes as multiples of the start (default: cpu "
                             f"{HELD_OUT['cpu']}, cuda {HELD_OUT['cuda']})")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from skyline_nb.profiler.device import resolve_device

    device = resolve_device(args.device)
    if args.clock == "cpu":
        if device.kind != "cpu":
            parser.error("--clock cpu is for the CPU device")
        device = cpu_clock_device(device.torch_device)
    capacity = device.capacity_bytes()
    print(header(args, f"{device.name()} · capacity {capacity / 2**30:.1f} GiB"), flush=True)
    print()
    shape = device.kind == "cpu" if args.shape is None else args.shape
    rows = []
    for name in args.models:
        for start in args.starts:
            began = time.perf_counter()
            rows.append(run_one(name, start, device, args.scale, max(1, args.repeats),
                                tuple(args.held_out or HELD_OUT[device.kind]), shape))
            print(f"  done in {time.perf_counter() - began:.0f} s: "
                  + table(rows[-1:], device.kind).splitlines()[2], flush=True, file=sys.stderr)
    print(table(rows, device.kind))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Profiler accuracy and cost, per example model and batch size (see BENCHMARKS.md).

For each model at batch 16 and 32: the uninstrumented iteration time (level 1), the wall time
of ``profile(predict=False)``, the instrumented iteration's overhead, the untracked share of time
(level 1 − Σ in-situ op times) and of peak memory, and the peak checked against an independent
figure: the running sum of torch.profiler's ``profile_memory`` allocation events over the same
window the profiler tracks (model creation, inputs, two iterations).

Issue bars: untracked time ≤ 8 %, peak within 1 % of the independent figure, profile wall time
≤ 1 s MLP, ≤ 5 s CNN, ≤ 10 s Transformer at batch 32.

    python benchmarks/profiler.py [--device cpu|cuda] [--batches 16 32] [--models mlp cnn]
"""

from __future__ import annotations

import argparse
import importlib
import platform
import time

import torch

from skyline_nb.profiler.session import profile
from skyline_nb.report import Report

WALL_BARS_S = {"mlp": 1.0, "cnn": 5.0, "transformer": 10.0}


def independent_peak(example, batch_size: int, device: str) -> int:
    """Max running sum of torch.profiler memory events over model + inputs + 2 iterations."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
        torch.cuda.synchronize()
    with torch_profile(activities=activities, profile_memory=True) as prof:
        model = example.skyline_model_provider().to(device)
        batch = example.skyline_input_provider(batch_size=batch_size)
        batch = tuple(t.to(device) for t in batch)
        iteration = example.skyline_iteration_provider(model)
        iteration(*batch)
        iteration(*batch)
        if device == "cuda":
            torch.cuda.synchronize()
        del model, batch, iteration
    wanted = "CUDA" if device == "cuda" else "CPU"
    events = sorted(
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and str(e.device_type()).endswith(wanted)
    )
    live = peak = 0
    for _start, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def row(name: str, batch_size: int, device: str) -> dict[str, float]:
    example = importlib.import_module(f"skyline_nb.examples.{name}")
    start = time.perf_counter()
    report: Report = profile(
        example.skyline_model_provider,
        example.skyline_input_provider,
        example.skyline_iteration_provider,
        batch_size=batch_size,
        device=device,
        predict=False,
    )
    wall = time.perf_counter() - start
    reference = independent_peak(example, batch_size, device)
    return {
        "iteration_ms": report.iteration_ms,
        "wall_s": wall,
        "overhead_pct": 100 * ((report.instrumented_ms or 0) / report.iteration_ms - 1),
        "untracked_time_pct": 100 * report.untracked_ms / report.iteration_ms,
        "untracked_mem_pct": 100 * report.categories["untracked"] / report.peak_bytes,
        "peak_mib": report.peak_bytes / 2**20,
        "reference_mib": reference / 2**20,
        "peak_diff_pct": 100 * (report.peak_bytes - reference) / reference if reference else 0.0,
        "warnings": len(report.warnings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn", "transformer", "lstm"])
    args = parser.parse_args()
    device_name = (
        torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu"
    )
    print(f"torch {torch.__version__}, {args.device} ({device_name}), "
          f"{torch.get_num_threads()} threads")
    # First use imports torch internals (dynamo via optimizer.step) for seconds; not ours.
    from skyline_nb.examples import mlp

    profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
            mlp.skyline_iteration_provider, batch_size=2, device=args.device, predict=False)
    header = (f"{'model':<12}{'batch':>6}{'iter ms':>10}{'wall s':>8}{'bar':>6}{'ovh %':>8}"
              f"{'untr t%':>9}{'untr m%':>9}{'peak MiB':>10}{'ref MiB':>9}{'Δpeak %':>9}")
    print(header)
    print("-" * len(header))
    for name in args.models:
        for batch_size in args.batches:
            r = row(name, batch_size, args.device)
            bar = WALL_BARS_S.get(name)
            mark = ""
            if bar is not None and batch_size == 32:
                mark = "ok" if r["wall_s"] <= bar else "OVER"
            print(f"{name:<12}{batch_size:>6}{r['iteration_ms']:>10.2f}{r['wall_s']:>8.2f}"
                  f"{mark:>6}{r['overhead_pct']:>8.1f}{r['untracked_time_pct']:>9.1f}"
                  f"{r['untracked_mem_pct']:>9.1f}{r['peak_mib']:>10.2f}"
                  f"{r['reference_mib']:>9.2f}{r['peak_diff_pct']:>9.2f}"
                  + (f"  ({r['warnings']} warnings)" if r["warnings"] else ""))


if __name__ == "__main__":
    main()

"""On a GPU, is a profile's headline what the user's own loop sees at launch-bound batch sizes?

On an H200 (BENCHMARKS.md, "CUDA, H200") the benchmark Transformer's samples at 8 and 16 were
timed at 7.9–9.2 ms inside profiles while fresh trials at 12 took 6.5–7.0 ms: time predictions
between the samples 23 % off. For each model and batch, ``--rounds`` interleaved rounds of:
the headline of ``profile(predict=False)``, a fresh trial's level 1 (``measure_iteration``,
what the held-out truths are) and the user's plain loop (a fresh model, 10 warm-up steps, then
the median of 30 steps each timed to a device synchronize), the same loop pipelined (30 steps,
one synchronize at the end: what a training loop runs at when the host launches ahead), each
with the SM clock (MHz, NVML) read just before. A profile whose op times exceeded its headline
and were scaled to it (``level2.fit_to_headline``) is marked "scaled".
Printed: one line per measurement, then medians per kind.

    PYTHONPATH=$PWD python3 benchmarks/cuda_headline.py --models transformer:8 lstm:32
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from example_providers import providers


def plain_loop_ms(provs: tuple, batch: int, device: str, pipelined: bool = False) -> float:
    """The user's own loop: median of 30 steps (each to a device synchronize on CUDA) after 10
    warm-up steps; ``pipelined``: 30 steps to one synchronize, their mean."""
    import torch

    def sync() -> None:
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()

    model_provider, input_provider, iteration_provider = provs
    model = model_provider().to(device)
    inputs = [t.to(device) for t in input_provider(batch_size=batch)]
    step = iteration_provider(model)
    for _ in range(10):
        step(*inputs)
    sync()
    if pipelined:
        began = time.perf_counter()
        for _ in range(30):
            step(*inputs)
        sync()
        return 1000 * (time.perf_counter() - began) / 30
    times = []
    for _ in range(30):
        began = time.perf_counter()
        step(*inputs)
        sync()
        times.append(1000 * (time.perf_counter() - began))
    return statistics.median(times)


def clock_mhz() -> int:
    import torch

    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # no NVML: the clock is not read
        return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["transformer:8", "lstm:32"],
                        help="model:batch pairs")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    import torch

    import skyline_nb
    from skyline_nb.profiler.level2 import SCALED
    from skyline_nb.profiler.prepare import measure_iteration

    print(f"# {' '.join(sys.argv)} | torch {torch.__version__} | {torch.cuda.get_device_name()}")
    for pair in args.models:
        name, batch = pair.split(":")
        provs, label = providers(name, "cuda", "bench")
        found: dict[str, list[float]] = {"headline": [], "level1": [], "plain": [],
                                         "pipelined": []}
        for round_ in range(args.rounds):
            kinds = list(found) if round_ % 2 == 0 else list(found)[::-1]
            for kind in kinds:
                mhz = clock_mhz()
                scaled = False
                if kind == "headline":
                    report = skyline_nb.profile(*provs, batch_size=int(batch), device="cuda",
                                                predict=False)
                    ms = report.iteration_ms
                    scaled = any(SCALED in w for w in report.warnings)
                elif kind == "level1":
                    ms = measure_iteration(*provs, int(batch), "cuda").iteration_ms
                else:
                    ms = plain_loop_ms(provs, int(batch), "cuda", kind == "pipelined")
                found[kind].append(ms)
                print(f"{name}({label})@{batch} round {round_} {kind}: {ms:.2f} ms "
                      f"(SM clock before: {mhz} MHz){' scaled' * scaled}", flush=True)
        print(f"{name}@{batch} medians: " + ", ".join(
            f"{kind} {statistics.median(v):.2f} ms" for kind, v in found.items()), flush=True)


if __name__ == "__main__":
    main()

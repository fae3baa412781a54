"""Why a launch-bound model's headline reads above a training loop's pace on a GPU.

The example MLP at 8 on an H100 (session 18): the profile's headline 1.28–1.38 ms, the same
steps in a loop that launches ahead to one synchronize 1.02–1.27 ms (``tests/gpu``). Its steps
are timed here in rounds, each way once per round, interleaved:

- ``pipelined``: 100 steps to one synchronize, wall clock / 100 (what a training loop runs at);
- ``wall/N``: chunks of N steps, each ending in a synchronize, wall clock / N (what the
  synchronizes alone do to the host's pace);
- ``pair/N``: the same chunks with an event pair around each step, as level 1 timed them
  before session 18 (``Event.record()`` looks the current stream up at every record);
  ``pair-cached/N``: the stream looked up once per chunk, as level 1 since;
  ``marks-cached/N``: one event before the chunk and one after each step (half the records);
- ``time_steps``: ``timing.time_steps`` as level 1 runs it (chunks of three here);
- ``headline``: a whole ``skyline_nb.profile`` (no samples).

    PYTHONPATH=$PWD python3 benchmarks/cuda_launch_bound.py --rounds 5
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable

import torch

import skyline_nb
from skyline_nb.examples import mlp
from skyline_nb.profiler.device import resolve_device
from skyline_nb.profiler.timing import HEADLINE, time_steps

SIZES = (3, 10)
STEPS = 90  # per way and round


def trained_step(batch: int) -> Callable[[], None]:
    """The example MLP's training step at ``batch``, on the GPU, warmed up."""
    model = mlp.skyline_model_provider().cuda()
    inputs = [t.cuda() for t in mlp.skyline_input_provider(batch_size=batch)]
    step = mlp.skyline_iteration_provider(model)

    def once() -> None:
        step(*inputs)

    for _ in range(20):
        once()
    torch.cuda.synchronize()
    return once


def pipelined(step: Callable[[], None]) -> float:
    began = time.perf_counter()
    for _ in range(100):
        step()
    torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - began) / 100


def chunked_wall(step: Callable[[], None], n: int) -> float:
    times = []
    for _ in range(STEPS // n):
        began = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        times.append(1000 * (time.perf_counter() - began) / n)
    return statistics.median(times)


def with_events(step: Callable[[], None], n: int, *, cached: bool, marks: bool) -> float:
    """Median step time by events in chunks of ``n``: an event pair around each step (start to
    end), or with ``marks`` one event before the chunk and one after each step (mark to mark:
    half the records); each recorded on the current stream looked up at every record (as
    ``Event.record()`` does) or, ``cached``, once per chunk."""
    times: list[float] = []
    for _ in range(STEPS // n):
        stream = torch.cuda.current_stream() if cached else None
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1 if marks else 2 * n)]
        if marks:
            events[0].record(stream)
            for mark in events[1:]:
                step()
                mark.record(stream)
            pairs = list(itertools.pairwise(events))
        else:
            pairs = list(zip(events[::2], events[1::2], strict=True))
            for begin, end in pairs:
                begin.record(stream)
                step()
                end.record(stream)
        torch.cuda.synchronize()
        times.extend(a.elapsed_time(b) for a, b in pairs)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    device = resolve_device("cuda")
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__} | {torch.cuda.get_device_name()}")
    step = trained_step(args.batch)
    pipelined(step)  # the GPU's clock ramps up
    found: dict[str, list[float]] = defaultdict(list)
    for r in range(args.rounds):
        found["pipelined"].append(pipelined(step))
        for n in SIZES:
            found[f"wall/{n}"].append(chunked_wall(step, n))
            for way, cached, marks in (("pair", False, False), ("pair-cached", True, False),
                                       ("marks-cached", True, True)):
                found[f"{way}/{n}"].append(with_events(step, n, cached=cached, marks=marks))
        found["time_steps"].append(time_steps(step, device, HEADLINE).result(HEADLINE))
        report = skyline_nb.profile(mlp.skyline_model_provider, mlp.skyline_input_provider,
                                    mlp.skyline_iteration_provider, batch_size=args.batch,
                                    device="cuda", predict=False)
        found["headline"].append(report.iteration_ms)
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in found.items()),
              flush=True)
    # the host's pace moves between rounds: each way against its own round's loop
    loops = found["pipelined"]
    for way, values in found.items():
        off = [100 * (v / loop - 1) for v, loop in zip(values, loops, strict=True)]
        print(f"{way:>15}: median {statistics.median(values):.3f} ms, against its round's loop "
              f"median {statistics.median(off):+.1f} % (range {min(off):+.1f} … {max(off):+.1f})")


if __name__ == "__main__":
    main()

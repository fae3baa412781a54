"""Page faults and time per sample of the example CNN's plain loop, batch 16 to 128.

Issue 15's CPU bar missed on the CNN from 16 at 2 threads in session 30 (held-out sizes 96–128
read 10–13 % slower than the curve through samples to 32). Blocks above glibc's 32 MiB mmap
cap are mapped and faulted in anew every iteration (``profiler/allocator.py``); this checks
whether that is what grows there: each size on a fresh model, with the allocator settled as a
profile leaves it, 3 warm iterations, then 8 timed with their minor faults and system time.

Run: ``PYTHONPATH=$PWD python benchmarks/cnn_faults.py THREADS``.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time

import torch

from skyline_nb.examples import cnn
from skyline_nb.profiler import allocator

SIZES = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128)
WARM, TIMED = 3, 8


def main(threads: int) -> None:
    torch.set_num_threads(threads)
    allocator.settle()
    torch.manual_seed(0)
    for batch in SIZES:
        model = cnn.skyline_model_provider()
        step = cnn.skyline_iteration_provider(model)
        inputs = cnn.skyline_input_provider(batch)
        for _ in range(WARM):
            step(*inputs)
        times = []
        before = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(TIMED):
            start = time.perf_counter()
            step(*inputs)
            times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_SELF)
        ms = statistics.median(times) * 1e3
        faults = (after.ru_minflt - before.ru_minflt) / TIMED
        system_ms = (after.ru_stime - before.ru_stime) / TIMED * 1e3
        print(f"threads {threads} batch {batch}: {ms:.1f} ms, {ms / batch * 1e3:.0f} us/sample, "
              f"{faults:.0f} faults/iter, sys {system_ms:.1f} ms/iter", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else torch.get_num_threads())

"""A busy CPU and torch's threads: what the user's loop does at its thread count and at one, and
what the profile says about it (``skyline_nb/profiler/threads.py``).

One competing process spins throughout, in a session of its own (``--apart``, as another
terminal's or another notebook kernel's process is: on Linux with autogroups the scheduler
shares the cores between sessions first) or in this script's session (``--same``, as
``trust.py --load`` runs it). Each round, per model, in this process: a plain loop's median at
torch's default thread count (``--plain`` steps of a warm model), the same at one thread, then
``skyline_nb.profile`` at the default count (predict=False: the comparison is made before the
samples), then the plain loop at the default count once more. Printed per round: the plain
medians, the profile's headline, the one-thread time it measured (``Report.one_thread``, or
"-": not measured, the headline's steps did not wait), the profile's wall time, and whether
torch's thread count came back. The one-thread time should match the one-thread loop, and the
speed-up it makes the ratio of the loops around it.

    PYTHONPATH=$PWD python benchmarks/busy_threads.py --apart --rounds 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from example_providers import MODELS, named_providers
from spinner import described, spinning
from trust import plain_median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--plain", type=int, default=10, help="iterations per plain loop")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--apart", action="store_true", help="the competitor in its own session")
    where.add_argument("--same", action="store_true", help="the competitor in this session")
    args = parser.parse_args()
    import torch

    import skyline_nb

    threads = torch.get_num_threads()
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {threads} threads, "
          f"{described(args.apart)}")
    print("| model | round | plain ms | plain ms, 1 thread | headline ms | note: 1 thread ms "
          "| note speed-up | loops' speed-up | plain ms after | profile s | threads back |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with spinning(args.apart):
        for name in args.models:
            providers, _ = named_providers(name)
            for round_ in range(args.rounds):
                plain = plain_median(providers, args.batch, args.plain)
                torch.set_num_threads(1)
                plain_one = plain_median(providers, args.batch, args.plain)
                torch.set_num_threads(threads)
                began = time.perf_counter()
                report = skyline_nb.profile(*providers, batch_size=args.batch, device="cpu",
                                            predict=False)
                wall = time.perf_counter() - began
                back = torch.get_num_threads() == threads
                after = plain_median(providers, args.batch, args.plain)
                one = report.one_thread.one_thread_ms if report.one_thread else None
                noted = "-" if one is None else f"{one:.2f}"
                speedup = "-" if one is None else f"{report.iteration_ms / one:.1f}×"
                print(f"| {name} | {round_ + 1} | {plain:.2f} | {plain_one:.2f} | "
                      f"{report.iteration_ms:.2f} | {noted} | {speedup} | "
                      f"{(plain + after) / 2 / plain_one:.1f}× | {after:.2f} | {wall:.1f} | "
                      f"{'yes' if back else 'NO'} |", flush=True)

if __name__ == "__main__":
    main()

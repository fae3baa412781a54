"""Do the time predictions hold while another process competes for the CPU?

A user's laptop runs a browser, an IDE, other kernels. This benchmark profiles one example on
CPU (``--threads`` torch threads, default 2) in phases: quiet, then with a competing process
that spins 50–400 ms at a time and sleeps 50–400 ms (on any core), alternating ``--phases``
times. The truth is measured quietly first, interleaved over 3 rounds (level 1 at the user's
batch and 2×, 4×, 8× it). Load makes everything slower, so what is judged is the SHAPE of the
time line, which does not depend on how loaded the headline happened to be:

    shape error at n = (predicted(n) / headline) / (truth(n) / truth(user)) − 1

(headline: the iteration time the profile measured at the user's batch, which the widget
shows beside the predictions), printed per profile and as the median |error| per phase, with
the profile's wall time.

``--blocks`` instead times 60 single iterations at the user's batch under the competing
process and prints each one's wall time beside how long this process's threads waited for a
CPU meanwhile (``skyline_nb.profiler.cpuwait``): the evidence for setting such blocks aside.

    python benchmarks/load.py --model cnn --batch 16 --rounds 5
    python benchmarks/load.py --model cnn --batch 32 --blocks
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def spin_in_bursts(stop: mp.synchronize.Event, seed: int) -> None:
    """The competing process: busy 50–400 ms, idle 50–400 ms, until told to stop."""
    rng = random.Random(seed)
    while not stop.is_set():
        end = time.perf_counter() + rng.uniform(0.05, 0.4)
        while time.perf_counter() < end:
            pass
        time.sleep(rng.uniform(0.05, 0.4))


class Competitor:
    """``with Competitor(on):`` runs one bursty spinning process while inside, when ``on``."""

    def __init__(self, on: bool, seed: int = 1) -> None:
        self.on, self.seed = on, seed
        self.stop = mp.Event()
        self.process: mp.Process | None = None

    def __enter__(self) -> Competitor:
        if self.on:
            self.process = mp.Process(target=spin_in_bursts, args=(self.stop, self.seed))
            self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.stop.set()
            self.process.join()


def blocks(providers: tuple, batch: int) -> None:
    from skyline_nb.profiler.cpuwait import wait_fraction, waited_ns
    from skyline_nb.profiler.device import resolve_device
    from skyline_nb.profiler.providers import build_trial, load_providers
    from skyline_nb.profiler.stacks import UserCode, default_project_root

    device = resolve_device("cpu")
    loaded = load_providers(*providers, UserCode(default_project_root(providers[0])))
    trial = build_trial(loaded, batch, device)
    for _ in range(5):
        trial.step()
    rows = []
    with Competitor(True):
        for _ in range(60):
            before, start = waited_ns(), time.perf_counter_ns()
            trial.step()
            ms = (time.perf_counter_ns() - start) / 1e6
            rows.append((ms, wait_fraction(before, waited_ns(), ms)))
    for ms, fraction in sorted(rows):
        print(f"{ms:8.2f} ms  waited {fraction * ms:7.2f} ms ({fraction:.3f} of the block)")


def shapes(providers: tuple, batch: int, rounds: int, phases: int) -> None:
    import skyline_nb
    from skyline_nb.profiler.prepare import measure_iteration

    sizes = [batch, 2 * batch, 4 * batch, 8 * batch]
    skyline_nb.profile(*providers, batch_size=batch, device="cpu")  # warm the process
    runs: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(3):
        for n in sizes:
            runs[n].append(measure_iteration(*providers, n, "cpu").iteration_ms)
    truth = {n: statistics.median(v) for n, v in runs.items()}
    print("truth (quiet, ms):", {n: round(v, 2) for n, v in truth.items()}, flush=True)
    for phase in range(phases):
        loaded = phase % 2 == 1
        errors: list[list[float]] = []
        off = 0
        with Competitor(loaded, seed=phase):
            for _ in range(rounds):
                start = time.perf_counter()
                report = skyline_nb.profile(*providers, batch_size=batch, device="cpu")
                wall = time.perf_counter() - start
                models = report.models
                if models is None or not models.can_manipulate:
                    off += 1
                    print(f"  loaded={loaded} wall={wall:.2f}s predictions off", flush=True)
                    continue
                ratio = {n: models.predict_iteration_ms(n) / report.iteration_ms for n in sizes}
                errors.append([100 * (ratio[n] / (truth[n] / truth[batch]) - 1) for n in sizes[1:]])
                measured = [(s.batch_size, round(s.iteration_ms, 1)) for s in report.samples]
                print(f"  loaded={loaded} wall={wall:.2f}s samples={measured} "
                      f"shape %={[round(e, 1) for e in errors[-1]]}", flush=True)
        medians = [round(statistics.median(abs(e[i]) for e in errors), 1) if errors else None
                   for i in range(3)]
        print(f"== loaded={loaded}: median |shape error| % at 2x/4x/8x {medians}, "
              f"predictions off {off} of {rounds}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="cnn", choices=("mlp", "cnn", "transformer", "lstm"))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5, help="profiles per phase")
    parser.add_argument("--phases", type=int, default=4, help="quiet, loaded, quiet, …")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--blocks", action="store_true", help="per-iteration waits instead")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from example_providers import named_providers

    providers, _ = named_providers(args.model)
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {args.threads} threads")
    if args.blocks:
        blocks(providers, args.batch)
    else:
        shapes(providers, args.batch, args.rounds, args.phases)


if __name__ == "__main__":
    main()

"""Profiles in a row of the example CNN, Transformer and LSTM at batch 16: each profile's knee
and its leave-one-out range (``knee.knee_spread``), and how many of the other profiles' knees
each range holds: the coverage a range should give, where a point knee gives almost none (a
notebook's knee read 20, 39, 40, 56, 74 and 145 in six profiles; BENCHMARKS.md, session 55).

    PYTHONPATH=$PWD python benchmarks/knee_spread.py [--threads N] [--profiles 5] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

import skyline_nb
from skyline_nb.examples import cnn, lstm, transformer

MODELS = {"cnn": cnn, "transformer": transformer, "lstm": lstm}


def profiles(count: int) -> list[dict]:
    rows = []
    for name, module in MODELS.items():
        for _ in range(count):
            report = skyline_nb.profile(module.skyline_model_provider,
                                        module.skyline_input_provider,
                                        module.skyline_iteration_provider, batch_size=16)
            models = report.models
            sizes = [s.batch_size for s in report.samples]
            rows.append({"name": name, "drag": models.can_manipulate,
                         "knee": models.knee_batch_size, "range": models.knee_range,
                         "sizes": sizes, "ms": [s.iteration_ms for s in report.samples],
                         "tolerance": models.tolerance})
            print(name, models.knee_batch_size, models.knee_range, sizes, flush=True)
    return rows


def coverage(rows: list[dict]) -> None:
    for name in MODELS:
        mine = [r for r in rows if r["name"] == name and r["knee"]]
        knees = [r["knee"] for r in mine]
        held = sum(1 for r in mine for k in knees if r["range"] and r["range"][0] <= k
                   and (r["range"][1] is None or k <= r["range"][1]))
        exact = sum(1 for r in mine for k in knees if k == r["knee"])
        print(f"{name}: knees {sorted(knees)}; the ranges hold {held} of {len(mine) ** 2} "
              f"(profile, knee) pairs, the point knees {exact}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--profiles", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write every profile's samples here (JSON)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    found = profiles(args.profiles)
    if args.out:
        args.out.write_text(json.dumps(found))
    coverage(found)

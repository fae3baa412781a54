"""Which saved profiles' time curves the trust rules accept, replayed offline (no device).

``prediction_accuracy.py --json`` keeps every profile's samples and every held-out measurement
(``benchmarks/results/*-json.tgz`` from the GPU sessions). This script fits each profile's
samples again with ``models.trust.fit_time`` and prints, per row, how many profiles the rules
trust, and each profile's curve with its mean |error| at the held-out sizes (against their
median) and its signed error at the sizes the start times a power of two and at the others:
run it at two commits to see what a change to the rules turns on or off, and how well
the curves it turns on predict. The samples were chosen by the plan of their own session (a
rule that trusts a curve earlier would have stopped sampling earlier), and the tolerance each
profile used (3× its headline's spread) is not saved: ``--tolerance`` stands in for it.

    PYTHONPATH=$PWD python benchmarks/replay_trust.py
    PYTHONPATH=$PWD python benchmarks/replay_trust.py --tolerance 0.10 results.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skyline_nb.models.curve import TOLERANCE
from skyline_nb.models.trust import fit_time

RESULTS = Path(__file__).resolve().parent / "results"


def rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, row) for every row of a ``--json`` file or of the JSON files in a .tgz."""
    if path.suffix == ".json":
        for row in json.loads(path.read_text(encoding="utf-8")):
            yield path.name, row
        return
    with tarfile.open(path) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            if member.name.endswith(".json"):
                data = archive.extractfile(member)
                for row in json.loads(data.read().decode("utf-8")) if data else []:
                    yield f"{path.name}:{Path(member.name).name}", row


def replay(row: dict[str, Any], tolerance: float) -> list[tuple[bool, str]]:
    """Per profile, whether it is trusted, and a line: trusted or why not, the curve's shape,
    its mean |error| at the held-out sizes, and its median signed error at those that are the
    start times a power of two (the samples' sizes, on a GPU) and at the others (e.g. 1.5×,
    where a matmul's tiles may fit worse)."""
    truth = {int(n): statistics.median(t for t, _ in runs)
             for n, runs in row["raw"].get("held_out", {}).items()}
    lines = []
    for samples in row["raw"].get("samples", []):
        sizes, times = [s[0] for s in samples], [s[1] for s in samples]
        curve, problems = fit_time(sizes, times, tolerance)
        errors = {n: 100 * (curve(n) / t - 1) for n, t in truth.items()}
        error = statistics.mean(map(abs, errors.values())) if errors else math.nan
        verdict = "trusted" if not problems else "refused: " + problems[0][:70]
        split = [[e for n, e in errors.items() if math.log2(n / row["start"]).is_integer() == p]
                 for p in (True, False)]
        signed = "  ".join(f"{label} {statistics.median(e):+5.1f} % ({len(e)})" if e else
                           f"{label}    —      "
                           for label, e in zip(("2^k×", "other"), split, strict=True))
        lines.append((not problems, f"{curve.shape:>7}  R² {curve.r2:.3f}  held-out "
                                    f"{error:5.1f} %  {signed}  {verdict}"))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help="--json files or .tgz of them (default: every *-json.tgz in "
                             "benchmarks/results)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = parser.parse_args(argv)
    files = args.files or sorted(RESULTS.glob("*-json.tgz"))
    trusted = total = 0
    for path in files:
        for where, row in rows(path):
            lines = replay(row, args.tolerance)
            if not lines:
                continue
            ok = sum(is_trusted for is_trusted, _ in lines)
            trusted, total = trusted + ok, total + len(lines)
            print(f"{where} {row['model']}@{row['start']}: {ok}/{len(lines)} trusted")
            for _, line in lines:
                print("    " + line)
    print(f"in all: {trusted} of {total} profiles trusted (tolerance {args.tolerance:g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The benchmarks whose numbers BENCHMARKS.md records still run against today's profiler.

Nothing else imports them, so an API change can break one silently: session 31's
``measure_iteration`` started returning the level-1 result instead of a ``Sample``, and
``prediction_accuracy.py`` failed at its first held-out median until session 32 ran it. Each is
run here at its smallest (the stock MLP, one round or one batch) in a process of its own, as
BENCHMARKS.md runs it; the numbers are not judged (a 2-core CI host is not the benchmark's
machine), only that a table row comes out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # about 3 s each: a torch import and a few MLP profiles

RUNS = {
    "prediction_accuracy": (["--models", "mlp", "--starts", "8", "--repeats", "1", "--scale",
                             "stock", "--held-out", "1.5"], "| mlp | stock | 8 |"),
    "trust": (["--models", "mlp", "--rounds", "1", "--batches", "16"], "| mlp | 16 |"),
    "kineto_inner": (["--models", "mlp", "--rounds", "1"], "| mlp | "),
    "peak_memory": (["--models", "mlp", "--batches", "16"], "| mlp | 16 |"),
    "stage_cost": (["--device", "cpu", "--models", "mlp:16", "--repeats", "1", "--scale",
                    "stock", "--threads", "1", "--steps"], "building the model, measuring its "
                   "memory, then timing the iteration and each op / _tracked_warmup / 16"),
    "first_profile": (["--models", "mlp", "--rounds", "1"], "| mlp | 16 |"),
    "measure_join": (["--models", "mlp", "--starts", "16", "--rounds", "1", "--at", "8", "4",
                      "--held-out", "3", "--plain", "3"], "| mlp | 16 | "),
    "new_size_faults": (["--model", "mlp", "--rounds", "1", "--threads", "1", "--settle"],
                        "round 1, 16: steady"),
    "thread_speedup": (["--models", "mlp", "--batches", "8", "16", "--passes", "1", "--plain",
                        "3"], "mlp speedup (1 thread / 2 threads): 8: "),
    "warm_up": (["--course", "--ab", "--models", "mlp:8", "--rounds", "1", "--iterations", "8",
                 "--pause", "5"], "  warm-up  iter "),
    "floor_ab": (["--rounds", "1", "--", "--models", "mlp", "--starts", "8", "--repeats", "1",
                  "--scale", "stock", "--held-out", "1.5"], "| mlp | stock | 8 |"),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_benchmark_runs_and_prints_its_table(name: str) -> None:
    args, row = RUNS[name]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert row in done.stdout, done.stdout[-3000:]

"""A profile inside a container's limits: a memory limit, and a CPU quota (needs root).

Many hosted notebooks run in a pod whose limits hide nothing a program usually reads: every
core stays visible and ``/proc/meminfo`` is the node's (``profiler/cgroup.py``). This makes a
cgroup of its own (v1 or v2, under ``/sys/fs/cgroup``), puts each run's process in it and
profiles there.

``--memory-mib M``: each run profiles a convolution net whose step holds ~20 MiB a sample
(at 8: 162 MiB tracked) and prints its exit status (137: the kernel's OOM killer), its
capacity, its samples and the top of the drag's range, then "Measure at N" for each
``--measure`` N as the widget does (``measurement.outgrows`` may refuse it), and with ``--top``
at the drag's top and one past it; ``--before`` runs
the same with the container's limit unread, samples allowed up to the whole capacity and every
N measured, as before session 47. ``--cpu-quota C``: plain loops of the example CNN and LSTM
at 16 (median and mean of 30 single iterations: a throttled process's steps are bimodal) and a
profile, at 2 threads and at one, each inside a C-CPU quota.

    sudo PYTHONPATH=$PWD python benchmarks/cgroup_limits.py --memory-mib 600 --runs 3
    sudo PYTHONPATH=$PWD python benchmarks/cgroup_limits.py --memory-mib 600 --runs 3 --before
    sudo PYTHONPATH=$PWD python benchmarks/cgroup_limits.py --memory-mib 600 --measure 11 16 22
    sudo PYTHONPATH=$PWD python benchmarks/cgroup_limits.py --memory-mib 600 --runs 3 --top
    sudo PYTHONPATH=$PWD python benchmarks/cgroup_limits.py --cpu-quota 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
NAME = "skyline_bench"

MEMORY_RUN = '''
import os, torch
from torch import nn
import torch.nn.functional as F
import skyline_nb
from skyline_nb.profiler import device
if os.environ.get("BEFORE"):  # the limit unread, samples up to the whole capacity
    device.memory_headroom = lambda *args: None
    device.Device.sampling_capacity_bytes = device.Device.capacity_bytes
def mp():
    return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
def ip(batch_size=8):
    return torch.randn(batch_size, 3, 128, 128), torch.randint(0, 10, (batch_size,))
def itp(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    def step(x, y):
        opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
    return step
r = skyline_nb.profile(mp, ip, itp)
print(f"capacity {r.device.capacity_bytes / 2**20:.0f} MiB, samples (batch, MiB) "
      f"{[(s.batch_size, round(s.peak_bytes / 2**20)) for s in r.samples]}, "
      f"the drag reaches {r.models.max_batch_size()}", flush=True)
from skyline_nb.measurement import outgrows
from skyline_nb.profiler.prepare import measure_iteration
sizes = [int(n) for n in os.environ.get("MEASURE", "").split()]
if os.environ.get("TOP"):  # the drag's top, and one past it
    sizes += [r.models.max_batch_size(), r.models.max_batch_size() + 1]
for n in sizes:  # "Measure at N", as the widget does
    refusal = None if os.environ.get("BEFORE") else outgrows(r, n)
    if refusal is None:
        m = measure_iteration(mp, ip, itp, n)
        print(f"measured at {n}: {m.peak_bytes / 2**20:.0f} MiB", flush=True)
    else:
        print(f"not measured at {n}: {refusal[:190]}…", flush=True)
'''

QUOTA_RUN = '''
import statistics, time, torch, skyline_nb
from skyline_nb.examples import cnn, lstm
for mod in (cnn, lstm):
    for threads in (2, 1):
        torch.set_num_threads(threads)
        model = mod.skyline_model_provider()
        step, x = mod.skyline_iteration_provider(model), mod.skyline_input_provider(16)
        for _ in range(3):
            step(*x)
        ms = []
        for _ in range(30):
            began = time.perf_counter(); step(*x); ms.append(1e3 * (time.perf_counter() - began))
        r = skyline_nb.profile(mod.skyline_model_provider, mod.skyline_input_provider,
                               mod.skyline_iteration_provider, batch_size=16)
        print(f"{mod.__name__.rsplit('.')[-1]} at {threads} thread(s): loop median "
              f"{statistics.median(ms):.1f} ms, mean {statistics.mean(ms):.1f}; profile "
              f"{r.iteration_ms:.1f}; first note: {r.warnings[0][:90] if r.warnings else '-'}")
'''


def make_group(controller: str, files: dict[str, str]) -> Path:
    """A cgroup of its own with ``files`` written: v2 where the unified hierarchy is mounted
    at the root, else v1's ``controller`` hierarchy."""
    v2 = (ROOT / "cgroup.controllers").exists()
    group = ROOT / NAME if v2 else ROOT / controller / NAME
    group.mkdir(exist_ok=True)
    for name, text in files.items():
        (group / name).write_text(text)
    return group


def run_inside(group: Path, code: str, env: dict[str, str]) -> tuple[int, str]:
    """Run ``code`` in a Python process that joins ``group`` before it starts."""
    def join() -> None:
        (group / "cgroup.procs").write_text(str(os.getpid()))

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, preexec_fn=join, check=False)
    return done.returncode, done.stdout.strip() or (done.stderr.strip().splitlines() or [""])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory-mib", type=int)
    parser.add_argument("--cpu-quota", type=float)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", action="store_true")
    parser.add_argument("--measure", nargs="*", type=int, default=[],
                        help="after each profile, Measure at these batch sizes")
    parser.add_argument("--top", action="store_true",
                        help="after each profile, Measure at the drag's top and one past it")
    args = parser.parse_args()
    print(f"# {' '.join(sys.argv)}", flush=True)
    v2 = (ROOT / "cgroup.controllers").exists()
    if args.memory_mib:
        limit = str(args.memory_mib << 20)
        group = make_group("memory", {"memory.max" if v2 else "memory.limit_in_bytes": limit})
        env = {"MEASURE": " ".join(map(str, args.measure)),
               **({"BEFORE": "1"} if args.before else {}), **({"TOP": "1"} if args.top else {})}
        for run in range(args.runs):
            rc, out = run_inside(group, MEMORY_RUN, env)
            print(f"run {run + 1}: exit {rc}{' (killed)' if rc in (-9, 137) else ''}: {out}",
                  flush=True)
    if args.cpu_quota:
        period = 100_000
        quota = str(int(args.cpu_quota * period))
        group = make_group("cpu", {"cpu.max": f"{quota} {period}"} if v2 else
                           {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": quota})
        print(run_inside(group, QUOTA_RUN, {})[1], flush=True)


if __name__ == "__main__":
    main()

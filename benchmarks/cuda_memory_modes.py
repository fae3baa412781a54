"""CUDA: does a profile's memory curve match fresh trials, by which allocator counter?

Diagnosis behind BENCHMARKS.md "CUDA, H200" (session 11). One process per mode, the four stock
examples in order (MLP first: the process's first matmul), each profiled at 8, then a fresh
trial (``measure_iteration``) at every sampled size and at 12, 24, 48 and 64, and once more at
24 (does a trial depend on what ran before it?). Printed: JSON lines with the samples (size,
peak, peak per phase), the fresh trials, the curve's predictions, and the allocator's bytes at
the end (allocated, requested). Modes patch ``CudaDevice`` in this process only (the results
file of session 11 was taken at commit 7bfc28f, before cuBLAS's workspaces were made ahead of
every baseline):

- ``A``: allocated bytes (the counter before session 11);
- ``B``: requested bytes (what callers asked for; the counter since session 11);
- ``C``: requested bytes, and cuBLAS's workspaces dropped before every measurement (each one
  then pays them, as a fresh process would).

    PYTHONPATH=$PWD python3 benchmarks/cuda_memory_modes.py A
"""

from __future__ import annotations

import json
import sys
import time


def patch(mode: str) -> None:
    import torch

    from skyline_nb.profiler import device, iteration, prepare, session

    counter = "allocated_bytes.all" if mode == "A" else "requested_bytes.all"

    def current(self: device.CudaDevice) -> int:
        return int(torch.cuda.memory_stats(self.torch_device)[f"{counter}.current"])

    def peak(self: device.CudaDevice) -> int:
        return int(torch.cuda.memory_stats(self.torch_device)[f"{counter}.peak"])

    device.CudaDevice.memory_allocated = current
    device.CudaDevice.max_memory_allocated = peak
    if mode == "C":
        original = iteration.measure_level1

        def dropping(*args: object, **kwargs: object) -> object:
            torch.cuda.synchronize()
            torch._C._cuda_clearCublasWorkspaces()
            return original(*args, **kwargs)

        for module in (iteration, session, prepare):
            if hasattr(module, "measure_level1"):
                module.measure_level1 = dropping


def main() -> None:
    mode = sys.argv[1]
    patch(mode)
    import torch
    from example_providers import MODELS, providers

    import skyline_nb
    from skyline_nb.profiler.prepare import measure_iteration

    def counters() -> list[int | None]:
        stats = torch.cuda.memory_stats()
        return [stats.get("allocated_bytes.all.current"), stats.get("requested_bytes.all.current")]

    print(json.dumps({"mode": mode, "start": counters(), "cudnn": torch.backends.cudnn.version(),
                      "clear": hasattr(torch._C, "_cuda_clearCublasWorkspaces")}), flush=True)
    for name in MODELS:
        provs, _ = providers(name, "cuda", "stock")
        began = time.time()
        report = skyline_nb.profile(*provs, batch_size=8, device="cuda")
        samples = [[s.batch_size, s.peak_bytes, s.peak_by_phase] for s in report.samples]
        sizes = sorted({s[0] for s in samples} | {12, 24, 48, 64})
        truth = {n: measure_iteration(*provs, n, "cuda").peak_bytes for n in sizes}
        again = measure_iteration(*provs, 24, "cuda").peak_bytes
        models = report.models
        predicted = {n: models.predict_peak_bytes(n) if models and models.memory else None
                     for n in sizes}
        print(json.dumps({"model": name, "peak": report.peak_bytes, "samples": samples,
                          "truth": truth, "again24": again, "pred": predicted,
                          "after": counters(), "s": round(time.time() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()

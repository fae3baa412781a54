"""How well does the memory curve predict the peak at batch sizes it was not measured at?

For each model and starting batch size, one ``skyline_nb.profile`` (its samples: the sizes the
sampler chose), then a fresh trial's peak at held-out sizes 1.5, 3, 4, 6 and 8 × the start
(``measure_iteration``: what a user's own loop at that size reaches). Peaks are bytes, exact on
CPU, so one run suffices and load does not matter. Printed: the sizes sampled, the error of the
shipped curve (``models.memory_curve.fit_memory`` with each sample's peak per phase) and, on
the same samples, of the curve through the step's peaks alone (before the phases were
measured), mean and worst |error| % over the held-out sizes.

    python benchmarks/memory_prediction.py
    python benchmarks/memory_prediction.py --models lstm gpt bert gpt2 --starts 8
    PYTHONPATH=$PWD python3 benchmarks/memory_prediction.py --device cuda \
        --models mlp cnn transformer lstm gpt convnext
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import peak_memory  # noqa: E402

MODELS = ("mlp", "cnn", "transformer", "lstm", "gpt", "convnext", "bert", "gpt2")


def providers(name: str) -> tuple:
    """The example models, the test suite's styled ones, and Hugging Face BERT and GPT-2 from
    small configs (``tests/unit/test_transformers_models.py``; needs the dev extra)."""
    if name in ("bert", "gpt2"):
        import test_transformers_models

        return getattr(test_transformers_models, f"{name}_providers")()
    return peak_memory.providers(name)
HELD_OUT = (1.5, 3.0, 4.0, 6.0, 8.0)


def errors(curve, truth: dict[int, int]) -> tuple[float, float]:
    values = [100.0 * abs(curve(n) / peak - 1) for n, peak in truth.items()]
    return statistics.mean(values), max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--starts", nargs="+", type=int, default=[8, 16])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args()
    import torch

    import skyline_nb
    from skyline_nb.models.memory_curve import fit_memory
    from skyline_nb.profiler.prepare import measure_iteration

    where = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"# {' '.join(sys.argv)} | torch {torch.__version__}, {torch.get_num_threads()} threads"
          f" | {where}")
    print("| model | start | samples | phases at the largest | by phase mean / max % "
          "| step peaks only mean / max % |")
    print("|---|---|---|---|---|---|")
    for name in args.models:
        provs = providers(name)
        for start in args.starts:
            report = skyline_nb.profile(*provs, batch_size=start, device=args.device)
            samples = report.samples
            sizes = [s.batch_size for s in samples]
            truth = {n: measure_iteration(*provs, n, args.device).peak_bytes
                     for n in sorted({round(start * f) for f in HELD_OUT} - set(sizes))}
            peaks = [s.peak_bytes for s in samples]
            shipped = fit_memory(sizes, peaks, [s.peak_by_phase for s in samples])
            before = fit_memory(sizes, peaks)
            largest = samples[-1].peak_by_phase
            holder = max(largest, key=largest.get) if largest else "unknown"
            print(f"| {name} | {start} | {','.join(map(str, sizes))} | {holder} | "
                  "{:.2f} / {:.2f} | {:.2f} / {:.2f} |".format(*errors(shipped, truth),
                                                              *errors(before, truth)),
                  flush=True)


if __name__ == "__main__":
    main()

"""Memory at the peak: how much of the peak each category holds, and what is left over.

For the example models and the GPT-style and ConvNeXt-style models of the tests
(``tests/unit/styled_models.py``: AdamW, tied embeddings, GELU, LayerNorm, depthwise convs),
at each batch size: the peak, the share of each category at the peak, "kernel workspace" (what
kernels allocate for themselves, seen only by the allocator) and "other" (the rest of the peak:
bar ≤ 5 %, never below −0.5 %), where the peak happened, and whether the categories add up to
the peak to the byte. Bytes are exact, so one run suffices and load does not matter.

    python benchmarks/peak_memory.py --batches 16 32
    python benchmarks/peak_memory.py --device cuda --batches 32 256
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit")]

SHOWN = ("weights", "activations", "grads", "optimizer", "inputs", "backward_temporaries",
         "kernel_workspace", "untracked")


def providers(name: str) -> tuple:
    import styled_models

    if name in ("gpt", "convnext"):
        return getattr(styled_models, f"{name}_providers")()
    module = importlib.import_module(f"skyline_nb.examples.{name}")
    return (module.skyline_model_provider, module.skyline_input_provider,
            module.skyline_iteration_provider)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--models", nargs="+",
                        default=["mlp", "cnn", "transformer", "lstm", "gpt", "convnext"])
    args = parser.parse_args()
    from skyline_nb.export.units import format_bytes
    from skyline_nb.profiler.session import profile

    print("| model | batch | peak | " + " | ".join(f"{k} %" for k in SHOWN)
          + " | sums to peak | peak in |")
    print("|---" * (len(SHOWN) + 5) + "|")
    for name in args.models:
        for batch in args.batches:
            report = profile(*providers(name), batch_size=batch, device=args.device,
                             predict=False)
            shares = [100.0 * report.categories[k] / report.peak_bytes for k in SHOWN]
            place = report.peak_place
            where = f"{place.phase} of {place.module or '(outside modules)'} ({place.op})"
            print(f"| {name} | {batch} | {format_bytes(report.peak_bytes)} | "
                  + " | ".join(f"{s:.2f}" for s in shares)
                  + f" | {sum(report.categories.values()) == report.peak_bytes} | {where} |",
                  flush=True)


if __name__ == "__main__":
    main()

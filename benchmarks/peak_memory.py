"""Memory at the peak: how much of the peak each category holds, and what is left over.

For the example models and the GPT-style and ConvNeXt-style models of the tests
(``tests/unit/styled_models.py``: AdamW, tied embeddings, GELU, LayerNorm, depthwise convs;
``--models`` takes a Hugging Face test model by name too, ``example_providers.named_providers``),
at each batch size: the peak, the share of each category at the peak, "kernel workspace" (what
kernels allocate for themselves, seen only by the allocator) and "other" (the rest of the peak:
bar ≤ 5 %, never below −0.5 %), where the peak happened, and whether the categories add up to
the peak to the byte; "grads in modules": the share of the gradients at the peak that the
modules whose parameters hold them carry (the widget draws them by module, session 32; 100 %
unless a gradient was replaced during the step). Bytes are exact, so one run suffices; load and
threads should not matter, and ``--threads`` / ``--load`` (one spinning process, ``spinner.py``)
show that they do not.

    python benchmarks/peak_memory.py --batches 16 32
    python benchmarks/peak_memory.py --threads 1 --load
    python benchmarks/peak_memory.py --device cuda --batches 32 256
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

SHOWN = ("weights", "activations", "grads", "optimizer", "inputs", "backward_temporaries",
         "kernel_workspace", "untracked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--models", nargs="+",
                        default=["mlp", "cnn", "transformer", "lstm", "gpt", "convnext"])
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--load", action="store_true", help="one competing spinning process")
    args = parser.parse_args()
    import torch
    from spinner import spinning

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# peak_memory.py, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          + ("one spinning process" if args.load else "quiet"))
    print("| model | batch | peak | " + " | ".join(f"{k} %" for k in SHOWN)
          + " | sums to peak | grads in modules % | peak in |")
    print("|---" * (len(SHOWN) + 6) + "|")
    with spinning(False) if args.load else contextlib.nullcontext():
        table(args)


def table(args: argparse.Namespace) -> None:
    from example_providers import named_providers

    from skyline_nb.export.units import format_bytes
    from skyline_nb.profiler.session import profile

    for name in args.models:
        provs, _ = named_providers(name, args.device)
        for batch in args.batches:
            report = profile(*provs, batch_size=batch, device=args.device, predict=False)
            shares = [100.0 * report.categories[k] / report.peak_bytes for k in SHOWN]
            place = report.peak_place
            where = f"{place.phase} of {place.module or '(outside modules)'} ({place.op})"
            grads = report.categories["grads"]
            in_modules = sum(c.peak_grad_bytes for c in report.tree.children)
            carried = f"{100.0 * in_modules / grads:.2f}" if grads else "—"
            print(f"| {name} | {batch} | {format_bytes(report.peak_bytes)} | "
                  + " | ".join(f"{s:.2f}" for s in shares)
                  + f" | {sum(report.categories.values()) == report.peak_bytes} | {carried} | "
                  f"{where} |", flush=True)


if __name__ == "__main__":
    main()

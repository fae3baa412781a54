"""A report as a pandas DataFrame: one row per module (or per op) with its times, memory, FLOPs
and where it is in the user's code, for sorting, filtering and plotting in the notebook.

pandas is imported only here, when asked for (it is not a dependency of skyline_nb); without it
``to_dataframe`` raises ImportError saying how to get it.

Rows at ``level="module"`` are the tree's module nodes, plus the optimizer and untracked nodes
and the ops run outside every module (the loss), whose time no module holds; at
``level="op"`` its leaves (ops, the untracked remainder). A module's numbers include its
descendants, so it is the rows at ``depth`` 1 that add up to the report's totals (time to the
iteration, FLOPs to ``total_flops``), as do all rows at ``level="op"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skyline_nb.categories import NodeKind
from skyline_nb.export.sqlite import frame_file_path

if TYPE_CHECKING:
    from skyline_nb.report import Node, Report

LEVELS = ("module", "op")
COLUMNS = (
    "path", "name", "kind", "depth", "forward_ms", "backward_ms", "total_ms",
    "saved_activation_bytes", "peak_activation_bytes", "weight_bytes", "grad_bytes",
    "peak_grad_bytes", "forward_flops", "backward_flops", "flops", "flops_per_s", "file", "line",
)


def to_dataframe(report: Report, level: str = "module") -> Any:
    """The report's nodes at ``level`` as a ``pandas.DataFrame`` (columns: ``COLUMNS``)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "report.to_dataframe needs pandas, which skyline_nb does not install: "
            "pip install pandas"
        ) from exc
    rows = [_row(node, depth) for node, depth in _nodes(report.tree, level)]
    frame = pandas.DataFrame(rows, columns=list(COLUMNS))
    frame["line"] = frame["line"].astype("Int64")  # line numbers, missing where no frame is
    return frame


def _nodes(root: Node, level: str) -> list[tuple[Node, int]]:
    kinds = ({NodeKind.MODULE, NodeKind.OPTIMIZER, NodeKind.UNTRACKED} if level == "module"
             else {NodeKind.OP, NodeKind.UNTRACKED})
    found: list[tuple[Node, int]] = []
    stack = [(child, 1) for child in reversed(root.children)]
    while stack:
        node, depth = stack.pop()
        if node.kind in kinds or (level == "module" and depth == 1):
            found.append((node, depth))
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return found


def _row(node: Node, depth: int) -> dict[str, Any]:
    flops = node.forward_flops + node.backward_flops
    seconds = node.total_ms / 1000.0
    frame = node.frames[0] if node.frames else None
    return {
        "path": node.path, "name": node.name, "kind": node.kind, "depth": depth,
        "forward_ms": node.forward_ms, "backward_ms": node.backward_ms,
        "total_ms": node.total_ms, "saved_activation_bytes": node.activation_bytes,
        "peak_activation_bytes": node.peak_activation_bytes, "weight_bytes": node.weight_bytes,
        "grad_bytes": node.grad_bytes, "peak_grad_bytes": node.peak_grad_bytes,
        "forward_flops": node.forward_flops,
        "backward_flops": node.backward_flops, "flops": flops,
        "flops_per_s": flops / seconds if seconds > 0 else None,
        # a notebook cell by its id, as the SQLite reports name it, not the kernel's temp file
        "file": (frame_file_path(frame) or frame.file) if frame else None,
        "line": frame.line if frame else None,
    }

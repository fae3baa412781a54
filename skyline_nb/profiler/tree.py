"""Assembling the breakdown tree: root -> module instances -> op leaves, optimizer, untracked.

One node per module INSTANCE (attribute path from ``named_modules``), so ``blocks.0`` and
``blocks.1`` are separate even when a loop runs them from one line. Parents hold the exact sums
of their children for forward/backward time and both activation counts (the widget relies on
Σ children = parent); weight and grad bytes of a module include its descendants. Children are
ordered by when they first ran, so the tree reads in execution order; modules that never ran
(still holding weights) come last, in definition order.

The root's time is the uninstrumented iteration. When the ops timed one by one add up to more
than that (negative untracked time: instrumentation overhead, threads woken inside op
windows), a child summed from them would be larger than the root ("148 % of the model"). The
tree then holds each op's share of the iteration instead: every op time is scaled by
iteration / Σ op times and the untracked node holds 0, so no node is larger than its parent
and the root equals the iteration. ``Report.untracked_ms`` and the profiler's warning keep the
measured difference.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from skyline_nb.categories import OPTIMIZER_PATH, UNTRACKED_PATH, NodeKind
from skyline_nb.profiler.compiled import class_name
from skyline_nb.profiler.memory import Span, user_path
from skyline_nb.profiler.operations import OperationTracker, OpRecord
from skyline_nb.report import Frame, Node


@dataclass
class TreeInputs:
    model: nn.Module
    ops: OperationTracker
    activation_by_op: dict[int | None, int]
    peak_activation_by_op: dict[int | None, int]
    saved_span_by_op: dict[int | None, Span]  # when those were saved and freed (memory.py)
    module_added: dict[tuple[str, str], int]  # (phase, module path) -> bytes (``peak.py``)
    flops: tuple[dict[int | None, int], dict[int | None, int]]  # forward, backward by op
    flop_bytes_moved: dict[int | None, int]
    weight_bytes: dict[str, int]  # parameter name -> bytes
    grad_bytes: dict[str, int]
    peak_grad_bytes: dict[str, int]  # parameter name -> its gradient's bytes alive at the peak
    param_frames: dict[str, list[Frame]]
    untracked_ms: float
    optimizer_name: str


def build_tree(inputs: TreeInputs) -> Node:
    """The root node of the report's tree (ids assigned depth first, parents first)."""
    model, ops = inputs.model, inputs.ops
    root = Node(id=0, name=class_name(model), path="", kind=NodeKind.ROOT)
    nodes: dict[str, Node] = {"": root}
    first: dict[int, int] = {}  # id(node) -> first op index in its subtree
    for name, module in model.named_modules():
        path = user_path(name)
        if path in nodes:  # torch.compile's wrapper, then the module it wraps: the user's class
            nodes[path].name = class_name(module)
            continue
        frames = ops.module_frames.get(path, [])
        node = Node(0, class_name(module), path, NodeKind.MODULE, frames=frames)
        nodes[path] = node
        nodes.get(path.rpartition(".")[0], root).children.append(node)
    for path, extra_class in ops.extra_modules.values():
        node = Node(0, extra_class, path, NodeKind.MODULE,
                    frames=ops.module_frames.get(path, []))
        nodes[path] = node
        root.children.append(node)
    # no optimizer stepped: an update written by hand (``optimizer_steps.py``)
    optimizer = Node(0, inputs.optimizer_name or "update", OPTIMIZER_PATH, NodeKind.OPTIMIZER)
    nodes[OPTIMIZER_PATH] = optimizer

    ops_ms = ops.ops_ms()
    scaled = inputs.untracked_ms < 0 < ops_ms
    share = (ops_ms + inputs.untracked_ms) / ops_ms if scaled else 1.0
    for record in ops.records:
        parent = nodes.get(record.module, root)
        leaf = _leaf(record, inputs, share)
        first[id(leaf)] = record.index
        parent.children.append(leaf)
    if optimizer.children:
        root.children.append(optimizer)
    untracked_ms = 0.0 if scaled else inputs.untracked_ms
    untracked = Node(0, "untracked", UNTRACKED_PATH, NodeKind.UNTRACKED, forward_ms=untracked_ms)
    untracked.activation_bytes = inputs.activation_by_op.get(None, 0)
    untracked.saved_span = inputs.saved_span_by_op.get(None)
    untracked.peak_activation_bytes = inputs.peak_activation_by_op.get(None, 0)
    untracked.forward_flops = inputs.flops[0].get(None, 0)
    untracked.backward_flops = inputs.flops[1].get(None, 0)
    untracked.flop_bytes_moved = inputs.flop_bytes_moved.get(None, 0)
    root.children.append(untracked)
    first[id(untracked)] = len(ops.records) + 1

    _own_weights(nodes, inputs)
    for (phase, path), added in inputs.module_added.items():
        node = nodes.get(path)
        if node is not None and phase in ("forward", "backward"):
            setattr(node, f"{phase}_peak_bytes", added)
    _sum_up(root, first)
    for number, node in enumerate(root.walk()):
        node.id = number
    return root


def _leaf(record: OpRecord, inputs: TreeInputs, share: float) -> Node:
    path = record.path
    name = record.name
    frames = record.frames
    if record.parameter is not None:
        name = f"accumulate_grad({record.parameter.rpartition('.')[2]})"
        frames = inputs.param_frames.get(record.parameter, [])
    return Node(
        0,
        name,
        path,
        NodeKind.OP,
        forward_ms=record.forward_ms * share,
        backward_ms=None if record.backward_ms is None else record.backward_ms * share,
        activation_bytes=inputs.activation_by_op.get(record.index, 0),
        saved_span=inputs.saved_span_by_op.get(record.index),
        peak_activation_bytes=inputs.peak_activation_by_op.get(record.index, 0),
        forward_flops=inputs.flops[0].get(record.index, 0),
        backward_flops=inputs.flops[1].get(record.index, 0),
        flop_bytes_moved=inputs.flop_bytes_moved.get(record.index, 0),
        frames=frames,
    )


def _own_weights(nodes: dict[str, Node], inputs: TreeInputs) -> None:
    for name, size in inputs.weight_bytes.items():
        owner = nodes.get(name.rpartition(".")[0])
        if owner is not None:
            owner.weight_bytes += size
            owner.grad_bytes += inputs.grad_bytes.get(name, 0)
            owner.peak_grad_bytes += inputs.peak_grad_bytes.get(name, 0)


def _sum_up(node: Node, first: dict[int, int]) -> int | None:
    """Post-order: sums children into ``node``, orders them, returns the subtree's first op."""
    if node.kind in (NodeKind.OP, NodeKind.UNTRACKED):
        return first.get(id(node))
    starts = {id(child): _sum_up(child, first) for child in node.children}
    definition = {id(child): i for i, child in enumerate(node.children)}
    node.children.sort(
        key=lambda c: (starts[id(c)] is None, starts[id(c)] or 0, definition[id(c)])
    )
    node.forward_ms = sum(c.forward_ms for c in node.children)
    backward = [c.backward_ms for c in node.children if c.backward_ms is not None]
    node.backward_ms = sum(backward) if backward else None
    node.activation_bytes = sum(c.activation_bytes for c in node.children)
    node.peak_activation_bytes = sum(c.peak_activation_bytes for c in node.children)
    node.forward_flops = sum(c.forward_flops for c in node.children)
    node.backward_flops = sum(c.backward_flops for c in node.children)
    node.flop_bytes_moved = sum(c.flop_bytes_moved for c in node.children)
    node.weight_bytes += sum(c.weight_bytes for c in node.children)
    node.grad_bytes += sum(c.grad_bytes for c in node.children)
    node.peak_grad_bytes += sum(c.peak_grad_bytes for c in node.children)
    # a module's peak is at least its children's (each measured from its own first op)
    node.forward_peak_bytes = max([node.forward_peak_bytes,
                                   *(c.forward_peak_bytes for c in node.children)])
    node.backward_peak_bytes = max([node.backward_peak_bytes,
                                    *(c.backward_peak_bytes for c in node.children)])
    known = [s for s in starts.values() if s is not None]
    return min(known) if known else None

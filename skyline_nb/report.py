"""The Report: the one data model every part of skyline_nb speaks.

The profiler produces it, the widget renders ONLY from its JSON (``to_dict``), and the exports
(SQLite in Skyline's schemas, JSON, standalone HTML) are views of it. Keeping it a plain tree of
dataclasses with a versioned, lossless ``to_dict``/``from_dict`` lets saved notebooks and shared
JSON files be read back by later versions (``schema_version`` says which layout a dict has).

Units: times in milliseconds (floats, as Skyline's reports), sizes in bytes (integers).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skyline_nb.categories import Categories, NodeKind
from skyline_nb.models.performance import PerformanceModels

SCHEMA_VERSION = 2
# Layouts ``from_dict`` still reads: 1 held the categories as bytes by key, without descriptors.
READABLE_VERSIONS = (1, SCHEMA_VERSION)


class ReportFormatError(ValueError):
    """A dict/JSON document is not a Report this version can read."""


@dataclass
class Frame:
    """One source location in the user's code.

    ``file`` is a path relative to the project root, or for a notebook cell the kernel's code
    name of that cell (see ``cells.py``); ``cell_id`` is set for cells and ``line`` is then the
    1-based line as the user sees it in the cell (the ``%%skyline`` line counts).
    """

    file: str
    line: int
    cell_id: str | None = None


@dataclass
class Node:
    """One node of the breakdown tree: a module instance, an operation, or a remainder.

    ``path`` is unique in the tree (module attribute path like ``layer1.0.conv2``; operations get
    ``<module path>/<op name>#<k>``). ``backward_ms`` is None when nothing ran backward for it.
    Module nodes carry the sums of their children; ``weight_bytes``/``grad_bytes`` count the
    parameters owned by the module and its descendants.
    """

    id: int
    name: str
    path: str
    kind: str  # a NodeKind
    forward_ms: float = 0.0
    backward_ms: float | None = None
    activation_bytes: int = 0  # saved for backward, by the op that saved it
    weight_bytes: int = 0
    grad_bytes: int = 0
    frames: list[Frame] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    peak_activation_bytes: int = 0  # forward outputs alive at the peak, by the op creating them
    # most bytes its forward (backward) added over what was alive when it began (modules)
    forward_peak_bytes: int = 0
    backward_peak_bytes: int = 0
    forward_flops: int = 0  # PyTorch's formulas (``profiler/flops.py``); modules: the sums
    backward_flops: int = 0
    flop_bytes_moved: int = 0  # what those FLOP-counted ops read and wrote (roofline)
    # of ``grad_bytes``, what was alive at the peak (the gradients category, split over modules)
    peak_grad_bytes: int = 0
    # ops: when ``activation_bytes`` were first saved and last freed, on the memory run's clock
    # (None: still alive when the iteration ended); None where unknown (modules, older reports)
    saved_span: tuple[int, int | None] | None = None

    @property
    def total_ms(self) -> float:
        return self.forward_ms + (self.backward_ms or 0.0)

    def walk(self) -> Iterator[Node]:
        """Yield this node and all descendants, depth first, parents before children."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, path: str) -> Node | None:
        return next((n for n in self.walk() if n.path == path), None)


@dataclass
class WeightEntry:
    """One named parameter (as ``named_parameters`` names it; tied weights appear once)."""

    name: str
    bytes: int
    grad_bytes: int
    frames: list[Frame] = field(default_factory=list)


@dataclass
class Sample:
    """One uninstrumented measurement at a batch size, used to fit the performance models."""

    batch_size: int
    iteration_ms: float
    peak_bytes: int
    # bytes alive at the peak by category key (as ``Report.categories``); empty when unknown
    categories: dict[str, int] = field(default_factory=dict)
    # the peak of each phase of the step (the model's forward, the loss until backward reaches
    # the model's outputs, backward, the optimizer step: profiler/phases.py), which the memory
    # model's lines go through; empty when unknown (CUDA, or a profiler of the user's running)
    peak_by_phase: dict[str, int] = field(default_factory=dict)


@dataclass
class DeviceInfo:
    kind: str  # "cuda" | "cpu"
    name: str
    capacity_bytes: int
    peak_flops: float = 0.0  # measured FLOP/s (``profiler/roofline.py``); 0 when not measured
    bandwidth: float = 0.0  # measured bytes/s


@dataclass
class SourceFile:
    """The code of a cell or project file that frames point into, for the code view."""

    file: str
    code: str
    cell_id: str | None = None


@dataclass
class BatchSizeSource:
    """Where the batch-size literal lives, so a drag can rewrite only its characters.

    ``kind`` is ``"signature_default"`` or ``"module_variable"``; ``start``/``end`` are Python str
    offsets of the literal in ``code`` and ``start_utf16``/``end_utf16`` the same positions in
    UTF-16 code units (JupyterLab's shared model indexes JavaScript strings). ``editable`` is
    false with ``reason`` when no unique integer literal was found; an editable source may still
    carry a ``reason`` note (e.g. the profiled batch differs from the literal).
    """

    code: str
    editable: bool
    kind: str | None = None
    start: int | None = None
    end: int | None = None
    value: int | None = None
    cell_id: str | None = None
    file: str | None = None
    reason: str | None = None
    start_utf16: int | None = None
    end_utf16: int | None = None
    text: str | None = None  # the literal as written (``code[start:end]``): ``32``, ``2_000_000``


@dataclass
class OneThread:
    """The step at one torch thread, timed where the headline's steps waited for a CPU at the
    user's ``threads`` (``profiler/threads.py``): on a busy machine each parallel op waits for
    its slowest thread, and one thread can be many times faster (the notes say so in words)."""

    threads: int
    one_thread_ms: float


@dataclass
class PeakPlace:
    """Where the memory peak happened: the phase (``forward``, ``backward``, ``optimizer``) and,
    when known, the module and op running then (in backward: whose backward ran)."""

    phase: str
    module: str | None = None
    op: str | None = None


@dataclass
class Report:
    batch_size: int
    iteration_ms: float
    throughput: float
    peak_bytes: int
    device: DeviceInfo
    tree: Node
    weights: list[WeightEntry] = field(default_factory=list)
    categories: Categories = field(default_factory=Categories.of)  # memory at the peak
    peak_place: PeakPlace | None = None
    total_flops: int = 0  # of one iteration: forward, backward and optimizer
    # tracked bytes over the memory run, in op order: [phase, op path, bytes] (for traces)
    memory_timeline: list[list[Any]] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    models: PerformanceModels | None = None
    sources: list[SourceFile] = field(default_factory=list)
    source: BatchSizeSource | None = None
    instrumented_ms: float | None = None
    untracked_ms: float = 0.0
    warnings: list[str] = field(default_factory=list)
    one_thread: OneThread | None = None  # None: not timed (the headline did not wait, 1 thread)
    torch_version: str = ""
    schema_version: int = SCHEMA_VERSION

    # ---- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``Report.from_dict(r.to_dict()) == r``."""
        data = asdict(self)
        data["categories"] = self.categories.to_json()
        data["models"] = self.models.to_dict() if self.models is not None else None
        for sample in data["samples"]:  # only where measured: reports before it stay as read
            if not sample["peak_by_phase"]:
                del sample["peak_by_phase"]
        if data["one_thread"] is None:  # likewise
            del data["one_thread"]
        nodes = [data["tree"]]
        while nodes:  # a span only where one was measured: an op that saved something
            node = nodes.pop()
            if node["saved_span"] is None:
                del node["saved_span"]
            nodes.extend(node["children"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        if not isinstance(data, dict):
            raise ReportFormatError(f"a report is a JSON object, not {type(data).__name__}")
        version = data.get("schema_version")
        if type(version) is not int or version not in READABLE_VERSIONS:
            raise ReportFormatError(
                f"report schema_version {version!r} is not {SCHEMA_VERSION} (or an earlier "
                "layout this version reads); it was written by another version of skyline_nb"
            )
        try:
            return cls(
                batch_size=int(data["batch_size"]),
                iteration_ms=float(data["iteration_ms"]),
                throughput=float(data["throughput"]),
                peak_bytes=int(data["peak_bytes"]),
                device=DeviceInfo(**data["device"]),
                tree=_node_from_dict(data["tree"]),
                weights=[
                    WeightEntry(**{**w, "frames": _frames(w.get("frames", []))})
                    for w in data.get("weights", [])
                ],
                categories=Categories.from_json(data.get("categories")).split_where(
                    data["tree"]),
                peak_place=(
                    PeakPlace(**data["peak_place"]) if data.get("peak_place") is not None
                    else None
                ),
                samples=[Sample(**s) for s in data.get("samples", [])],
                models=(
                    PerformanceModels.from_dict(data["models"])
                    if data.get("models") is not None
                    else None
                ),
                sources=[SourceFile(**s) for s in data.get("sources", [])],
                source=(
                    BatchSizeSource(**data["source"]) if data.get("source") is not None else None
                ),
                total_flops=int(data.get("total_flops", 0)),
                memory_timeline=[list(entry) for entry in data.get("memory_timeline", [])],
                instrumented_ms=data.get("instrumented_ms"),
                untracked_ms=float(data.get("untracked_ms", 0.0)),
                warnings=list(data.get("warnings", [])),
                one_thread=(
                    OneThread(**data["one_thread"]) if data.get("one_thread") is not None
                    else None
                ),
                torch_version=data.get("torch_version", ""),
            )
        except ReportFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportFormatError(f"malformed report: {type(exc).__name__}: {exc}") from exc

    def to_json(self, path: str | Path | None = None, *, overwrite: bool = True) -> str:
        """Compact JSON text; written atomically to ``path`` too when given.

        NaN and infinity are not JSON: a report holding one is refused, naming the fields.
        ``skyline_nb.export`` is imported here, when writing, not with this module: the data
        model imports none of its exporters at module level.
        """
        data = self.to_dict()
        try:
            text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        except ValueError as exc:
            fields = ", ".join(_non_finite(data, "report")) or str(exc)
            raise ReportFormatError(f"not JSON-representable (NaN or infinity): {fields}") from exc
        if path is not None:
            from skyline_nb.export import atomic_output

            with atomic_output(path, overwrite=overwrite) as temp:
                temp.write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> Report:
        if isinstance(text_or_path, Path) or not str(text_or_path).lstrip().startswith("{"):
            text_or_path = Path(text_or_path).read_text(encoding="utf-8")
        return cls.from_dict(json.loads(text_or_path))

    def to_html(self, path: str | Path, title: str = "Skyline profile") -> Path:
        """Write one offline page rendering this report with the interactive widget.

        A convenience for ``export.html.save_html``, imported here, not with this module.
        """
        from skyline_nb.export.html import save_html

        return save_html(self.to_dict(), Path(path), title)

    def to_dataframe(self, level: str = "module") -> Any:
        """One row per module (or per op) as a ``pandas.DataFrame``.

        A convenience for ``export.dataframe.to_dataframe``, imported here, not with this
        module (pandas is optional: without it this raises ImportError saying so).
        """
        from skyline_nb.export.dataframe import to_dataframe

        return to_dataframe(self, level)

    def to_chrome_trace(self, path: str | Path, *, overwrite: bool = True) -> Path:
        """Write the instrumented iteration as Chrome trace-event JSON (Perfetto, chrome://tracing).

        Start times are laid out from the measured durations in execution order, not recorded
        (the rules: ``export.trace``). A convenience for ``export.trace.save_chrome_trace``,
        imported here, not with this module; written atomically.
        """
        from skyline_nb.export.trace import save_chrome_trace

        return save_chrome_trace(self, path, overwrite=overwrite)

    def save_sqlite(self, path: str | Path, kind: str = "time", *, overwrite: bool = False) -> Path:
        """Write Skyline's ``time`` or ``memory`` SQLite report (exact schemas).

        A convenience for ``export.sqlite.save_report``, imported here, not with this module.
        """
        from skyline_nb.export.sqlite import save_report

        return save_report(self, Path(path), kind, overwrite=overwrite)


def _non_finite(value: Any, where: str) -> Iterator[str]:
    """The dotted paths of NaN/infinite floats in a ``to_dict()`` tree (for error messages)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield f"{where}={value}"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _non_finite(item, f"{where}[{i}]")


def _frames(items: list[dict[str, Any]]) -> list[Frame]:
    return [Frame(**f) for f in items]


def _span(value: Any) -> tuple[int, int | None] | None:
    if value is None:
        return None
    start, end = value
    return (int(start), None if end is None else int(end))


def _node_from_dict(data: dict[str, Any]) -> Node:
    if data.get("kind") not in set(NodeKind):
        raise ReportFormatError(f"unknown node kind {data.get('kind')!r}")
    return Node(
        id=int(data["id"]),
        name=data["name"],
        path=data["path"],
        kind=data["kind"],
        forward_ms=float(data["forward_ms"]),
        backward_ms=None if data.get("backward_ms") is None else float(data["backward_ms"]),
        activation_bytes=int(data["activation_bytes"]),
        peak_activation_bytes=int(data.get("peak_activation_bytes", 0)),
        forward_peak_bytes=int(data.get("forward_peak_bytes", 0)),
        backward_peak_bytes=int(data.get("backward_peak_bytes", 0)),
        forward_flops=int(data.get("forward_flops", 0)),
        backward_flops=int(data.get("backward_flops", 0)),
        flop_bytes_moved=int(data.get("flop_bytes_moved", 0)),
        weight_bytes=int(data["weight_bytes"]),
        grad_bytes=int(data["grad_bytes"]),
        peak_grad_bytes=int(data.get("peak_grad_bytes", 0)),
        saved_span=_span(data.get("saved_span")),
        frames=_frames(data.get("frames", [])),
        children=[_node_from_dict(c) for c in data.get("children", [])],
    )

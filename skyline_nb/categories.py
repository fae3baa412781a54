"""The report's vocabulary: node kinds and memory categories, defined once.

Every view draws memory from the category list a report carries (``Report.categories``), never
from names of its own: the widget's bars, legend and styles (``js/src/categories.js``), the
static snapshot and the SQLite export. Adding a category is one entry in ``Category`` and
``CATEGORIES`` here, plus the measurement that fills its bytes.

A category's descriptor says how every view treats it:

- ``label``: the words shown for it; ``color`` (``#rrggbb``) and ``texture`` (a ``Texture``,
  a CSS ``data-texture`` value) how it is drawn.
- ``grows_with_batch``: predicted at another batch size in proportion to the batch; otherwise
  constant, except the ``remainder`` category: the peak's bytes that no other category claims,
  predicted as the memory model's peak minus all the others.
- ``node_field``: the ``Node`` field that splits the category over the tree (one segment per
  module, coloured by module, the texture marking the category); without one the category is a
  single segment at the root, in its own colour. ``parameter_field``: for a category held by
  parameters, the ``WeightEntry`` field with each parameter's share; its segments also point at
  the lines that created their parameters. ``node_kind``: the tree node that stands for the
  category (its segment is that node; segments of that node take the category's colour and
  texture).
- ``shown_with``: the key of the category whose segments also carry this one (the widget draws
  gradients inside the weights' segments); the two share their growth rule.

Known limitations: a category without ``node_field`` is shown only at the top of the drill
path, as the tree cannot say which module holds it. The code view's per-line memory counts
parameters and activations from the tree and ``Report.weights``, not from this list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from enum import Enum
from typing import Any


class _StrEnum(str, Enum):
    """A ``str`` whose ``str()`` and ``format()`` are its value, as ``enum.StrEnum`` (3.11)."""

    def __str__(self) -> str:
        return str(self.value)


class NodeKind(_StrEnum):
    """What a node of the breakdown tree stands for."""

    ROOT = "root"  # the model: the whole iteration
    MODULE = "module"  # one module instance
    OP = "op"  # one operation: a leaf
    OPTIMIZER = "optimizer"  # the optimizer step, parent of its operations
    UNTRACKED = "untracked"  # the time and bytes no operation claimed


# The paths of the tree's two nodes that are not modules.
OPTIMIZER_PATH = "[optimizer]"
UNTRACKED_PATH = "[untracked]"


class Category(_StrEnum):
    """The memory categories at the peak, keyed as in reports and SQLite ``misc_sizes``."""

    WEIGHTS = "weights"
    ACTIVATIONS = "activations"
    GRADS = "grads"
    BUFFERS = "buffers"
    OPTIMIZER = "optimizer"
    INPUTS = "inputs"
    BACKWARD_TEMPORARIES = "backward_temporaries"
    OPTIMIZER_TEMPORARIES = "optimizer_temporaries"
    KERNEL_WORKSPACE = "kernel_workspace"
    UNTRACKED = "untracked"


class Texture(_StrEnum):
    """The marks drawn over a segment's colour (``data-texture`` in the widget's CSS)."""

    PLAIN = "plain"
    STRIPES = "stripes"
    HATCH = "hatch"


_COLOR = re.compile(r"#[0-9a-fA-F]{6}")


@dataclass(frozen=True)
class CategorySpec:
    """How one memory category is measured against the batch and drawn (see the module doc)."""

    key: str
    label: str
    grows_with_batch: bool
    color: str
    texture: str = Texture.PLAIN
    node_field: str | None = None
    parameter_field: str | None = None
    node_kind: str | None = None
    shown_with: str | None = None
    remainder: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.key, str) and self.key and isinstance(self.label, str)):
            raise ValueError(f"a category needs a key and a label, not {self.key!r}")
        if not isinstance(self.color, str) or not _COLOR.fullmatch(self.color):
            raise ValueError(f"category {self.key!r}: color {self.color!r} is not #rrggbb")
        if not isinstance(self.grows_with_batch, bool) or not isinstance(self.remainder, bool):
            raise ValueError(f"category {self.key!r}: grows_with_batch and remainder are bools")
        if self.remainder and self.grows_with_batch:
            raise ValueError(f"category {self.key!r}: the remainder follows the memory model")
        names = (self.texture, self.node_field, self.parameter_field, self.node_kind,
                 self.shown_with)
        if not all(name is None or isinstance(name, str) for name in names):
            raise ValueError(f"category {self.key!r}: texture and field names are strings")


# In display order: the widget's memory bar draws the categories split over the tree left to
# right, then the single-segment ones together, largest first.
# Bytes are those alive at the peak (``profiler/peak.py``): gradients only those computed by
# then, activations the forward outputs still alive, split over the modules that created them.
# Categories split over the tree take their modules' colours (plain for activations, striped
# for parameters, hatched for gradients); every other one is hatched in a colour of its own,
# outside the modules' palette, so a module's segment never reads as one of them. Gradients are
# split over the modules whose parameters hold them at the end of the iteration (an opened
# module showed its parameters but none of their gradients, session 31's walkthrough).
CATEGORIES: tuple[CategorySpec, ...] = (
    CategorySpec(Category.WEIGHTS, "parameters", False, "#4e79a7", Texture.STRIPES,
                 node_field="weight_bytes", parameter_field="bytes"),
    CategorySpec(Category.ACTIVATIONS, "activations", True, "#f28e2b",
                 node_field="peak_activation_bytes"),
    CategorySpec(Category.GRADS, "gradients", False, "#2a9d8f", Texture.HATCH,
                 node_field="peak_grad_bytes"),
    CategorySpec(Category.BUFFERS, "buffers", False, "#6d597a", Texture.HATCH),
    CategorySpec(Category.OPTIMIZER, "optimizer state", False, "#7e57c2", Texture.HATCH,
                 node_kind=NodeKind.OPTIMIZER),
    CategorySpec(Category.INPUTS, "inputs", True, "#c9a227", Texture.HATCH),
    CategorySpec(Category.BACKWARD_TEMPORARIES, "backward temporaries", True, "#c44536",
                 Texture.HATCH),
    CategorySpec(Category.OPTIMIZER_TEMPORARIES, "optimizer temporaries", False, "#8e6c8a",
                 Texture.HATCH),
    CategorySpec(Category.KERNEL_WORKSPACE, "kernel workspace", True, "#d4a6c8",
                 Texture.HATCH),
    CategorySpec(Category.UNTRACKED, "other", False, "#8a8a8a", Texture.HATCH,
                 node_kind=NodeKind.UNTRACKED, remainder=True),
)

_SPEC_FIELDS = tuple(f.name for f in fields(CategorySpec))


class Categories(Mapping[str, int]):
    """A report's memory categories in display order: bytes at the peak by key (a read-only
    mapping), each with its ``CategorySpec`` (``spec(key)``, ``specs``)."""

    def __init__(self, entries: Iterable[tuple[CategorySpec, int]] = ()) -> None:
        self._entries = tuple((spec, int(size)) for spec, size in entries)
        self._bytes = {str(spec.key): size for spec, size in self._entries}
        if len(self._bytes) != len(self._entries):
            raise ValueError("a category key appears twice")
        for spec, _ in self._entries:
            host = self._spec_or_none(spec.shown_with)
            if spec.shown_with is not None and (host is None or host.shown_with is not None):
                raise ValueError(f"category {spec.key!r} is shown with {spec.shown_with!r}, "
                                 "which is not a category drawn on its own")
        if sum(spec.remainder for spec, _ in self._entries) > 1:
            raise ValueError("at most one category is the remainder of the peak")

    @classmethod
    def of(cls, bytes_by_key: Mapping[str, int] | None = None) -> Categories:
        """The default categories (``CATEGORIES``), each holding the bytes named for it (0 when
        not named); a key that names no default category is an error."""
        given = dict(bytes_by_key or {})
        unknown = set(given) - {str(spec.key) for spec in CATEGORIES}
        if unknown:
            raise ValueError(f"unknown memory categories: {sorted(unknown)}")
        return cls((spec, given.get(str(spec.key), 0)) for spec in CATEGORIES)

    @classmethod
    def at_peak(cls, peak_bytes: int, measured: Mapping[str, int]) -> Categories:
        """The default categories holding ``measured``; the remainder category holds what the
        peak has beyond them (negative when the measured parts add up to more)."""
        rest = next(spec.key for spec in CATEGORIES if spec.remainder)
        if rest in measured:
            raise ValueError(f"{rest!r} is the remainder of the peak, not a measurement")
        return cls.of({**measured, rest: peak_bytes - sum(measured.values())})

    def with_peak(self, peak_bytes: int) -> Categories:
        """The same measured categories at another peak: the remainder takes the difference."""
        measured = sum(size for spec, size in self._entries if not spec.remainder)
        return Categories((spec, peak_bytes - measured if spec.remainder else size)
                          for spec, size in self._entries)

    @classmethod
    def from_json(cls, value: Any) -> Categories:
        """Read ``to_json()``'s list; a dict of bytes by key (reports written before they
        carried descriptors) or no value reads as the default categories."""
        if value is None or isinstance(value, dict):
            return cls.of({key: int(size) for key, size in (value or {}).items()})
        if not isinstance(value, list):
            raise ValueError(f"categories are a list, not {type(value).__name__}")
        entries = []
        for item in value:
            spec = CategorySpec(**{k: item[k] for k in _SPEC_FIELDS if k in item})
            size = item["bytes"]
            if not isinstance(size, int) or isinstance(size, bool):
                raise ValueError(f"category {spec.key!r}: bytes {size!r} is not an integer")
            entries.append((spec, size))
        return cls(entries)

    def split_where(self, fields_present: Iterable[str]) -> Categories:
        """The same categories, those whose ``node_field`` is not among ``fields_present``
        (the tree of a report written before that field existed) drawn as one segment."""
        present = set(fields_present)
        return Categories(
            (spec if spec.node_field is None or spec.node_field in present
             else replace(spec, node_field=None), size) for spec, size in self._entries)

    def to_json(self) -> list[dict[str, Any]]:
        """One JSON object per category, in order: its descriptor and its ``bytes``."""
        out = []
        for spec, size in self._entries:
            item = {k: (str(v) if isinstance(v, Enum) else v) for k, v in asdict(spec).items()}
            out.append({"key": item.pop("key"), "label": item.pop("label"), "bytes": size, **item})
        return out

    @property
    def specs(self) -> tuple[CategorySpec, ...]:
        return tuple(spec for spec, _ in self._entries)

    def spec(self, key: str) -> CategorySpec:
        found = self._spec_or_none(key)
        if found is None:
            raise KeyError(key)
        return found

    def _spec_or_none(self, key: str | None) -> CategorySpec | None:
        return next((spec for spec, _ in self._entries if spec.key == key), None)

    def __getitem__(self, key: str) -> int:
        return self._bytes[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bytes)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Categories):
            return NotImplemented
        return self._entries == other._entries

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Categories({self._bytes!r})"

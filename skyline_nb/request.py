"""What one widget profiles (``ProfileRequest``): the providers it was made from, re-read by
name only where the place that defined them defines them again, and the options.

``%skyline`` finds the providers by name in the notebook. A notebook that compares two models
defines ``skyline_model_provider`` and the others in one cell, profiles them, then defines them
again for another model in a later cell and profiles that. The first widget's Re-profile and
"Measure at N" must still run the first model. Found by name at every run, they ran the second:
a 64→32→4 MLP's widget measured a 64→512→512→4 MLP at 96 (2.87 MB where 71.6 KB was
predicted), joined it to its curve, and its predicted maximum throughput fell from 887,219 to
191,146 samples/s (session 46). So a provider the names give now replaces the one a widget
holds only where both come from the same place (``origin``): the same function of the same
notebook cell run again, or of the same file. Running the widget's own cell again re-reads them all
(``ProfileRequest.rebind``), as the watch on that cell has always meant. The providers held
still read the notebook's globals as they are now: where a later cell defined again a class they
call, "Measure at N" sees other parameters and joins nothing (``measurement``), and a
Re-profile's notes say its model changed (``live``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skyline_nb import cells
from skyline_nb.inputs import batch_variable, code_of, def_name


def origin(fn: Callable[..., Any]) -> tuple[str, str] | None:
    """Where ``fn`` was defined, and as what: its notebook cell's id where the cell has one,
    else its code's file (a cell that ran before ``%load_ext``, a module), with the function's
    qualified name (two functions of one module are two origins); None for a callable without
    code of its own (``inputs.code_of``), whose origin nothing tells."""
    code = code_of(fn)
    if code is None:
        return None
    entry = cells.lookup(code.co_filename)
    place = entry.cell_id if entry is not None and entry.cell_id else code.co_filename
    return place, code.co_qualname


def kept(found: tuple[Any, ...], held: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each of ``held`` (the providers a widget profiled), or the one of ``found`` (what the
    names give now) in its role where it comes from the same ``origin``: the user ran that cell
    again, or redefined it in the same file."""
    return tuple(new if new is old or _same_origin(new, old) else old
                 for new, old in zip(found, held, strict=True))


def _same_origin(new: Callable[..., Any], old: Callable[..., Any]) -> bool:
    where = origin(new)
    return where is not None and where == origin(old)


Providers = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]


@dataclass
class ProfileRequest:
    """What to profile and how; the magic builds it from its arguments and the namespace.
    ``find``: the providers by name, as the notebook defines them now."""

    find: Callable[[], Providers]
    device: str | None = None
    predict: bool = True
    memory_budget: int | None = None
    batch_size_var: str | None = None
    namespace: dict[str, Any] = field(default_factory=dict)
    project_root: str | None = None
    input_name: str | None = None  # ``-i NAME``: the name the input provider was given
    _held: Providers | None = field(default=None, init=False, repr=False)

    def resolve(self) -> Providers:
        """The providers to profile: at the first call those ``find`` gives, after it the ones
        held, each replaced by what the names give where that comes from the same place
        (``kept``); the ones held where the names are gone."""
        try:
            found = self.find()
        except Exception:  # the names are gone or never were: only the ones held can do
            if self._held is None:
                raise
            return self._held
        self._held = found if self._held is None else kept(found, self._held)
        return self._held

    def rebind(self) -> None:
        """Take whatever the names give at the next ``resolve`` (the widget's own cell ran)."""
        self._held = None

    def read_variable(self) -> None:
        """Without ``--batch-size-var``, the variable an input provider without a
        ``batch_size`` parameter reads (``inputs.batch_variable``; raises ``UsageError``)."""
        if self.batch_size_var is None:
            self.batch_size_var = batch_variable(self.resolve()[1], self.namespace)

    def input_provider_name(self) -> str | None:
        """Whose ``def`` holds the cell's batch-size literal (``inputs.def_name``), else the
        name ``-i`` gave (a lambda, a partial assigned to it); None: the default names."""
        try:
            return def_name(self.resolve()[1]) or self.input_name
        except Exception:  # any failure to resolve: the default names
            return self.input_name

"""Whether the code a profile was made from is still the code a new profile would run.

``%skyline -o FILE`` exports the profile already shown, rather than profiling again, when the
providers and options are unchanged. ``Made`` records that at profile time; two records are equal
only when everything the providers can reach compares equal:

* a function of the user's code (a notebook cell or a user file): the same object, the same code,
  defaults and closure values, and, through every global name its code uses, what those names
  refer to now (compared by these same rules);
* a class of the user's code: the same object, its functions and its user-code bases;
* any other function, class or object: the same object (identity; it is not looked into), or,
  for an object that cannot be referenced weakly, an equal value when it is hashable
  (``torch.device``, a dtype);
* None, numbers, strings, bytes: equal values; tuples and frozensets item by item;
* a module: not compared (library code, imported once).

So redefining a model class or a helper in another cell, rebinding a global the providers read
(``batch_size = 64``) or re-running the providers' cell all count as changed.

Known limitations: an unhashable value that cannot be referenced weakly (a list, a dict, a set)
makes every record unequal (it could have changed in place), so providers that read such a
global always re-profile; an object reached by identity (a tensor, a module instance) may have
changed in place unnoticed.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skyline_nb import cells

if TYPE_CHECKING:
    from skyline_nb.report import Report

# How many objects one record may look at before it gives up (then nothing compares equal).
MAX_OBJECTS = 5000
_VALUES = (type(None), bool, int, float, complex, str, bytes)


class _Unknown(Exception):
    """Something reachable cannot be compared."""


class _Same:
    """Equal to another ``_Same`` of the very same living object (TypeError for an object that
    cannot be referenced weakly)."""

    __slots__ = ("ref",)

    def __init__(self, obj: Any) -> None:
        self.ref = weakref.ref(obj)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Same):
            return NotImplemented
        obj = self.ref()
        return obj is not None and obj is other.ref()

    __hash__ = None  # type: ignore[assignment]


@dataclass(eq=False)
class Made:
    """What one profile was made from: its providers' reach and the options it was run with."""

    reach: tuple[Any, ...] | None  # None: something reachable cannot be compared
    options: tuple[Any, ...]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Made):
            return NotImplemented
        return self.reach is not None and self.reach == other.reach and (
            self.options == other.options)


def made(providers: tuple[Any, ...], *options: Any) -> Made:
    """The record for ``providers`` (the user's functions) run with ``options``."""
    walk = _Walk()
    try:
        reach = tuple(walk.describe(p) for p in providers)
    except (_Unknown, RecursionError):
        reach = None
    return Made(reach, options)


class _Walk:
    """One record's walk: what each reachable object is described as (see the module doc)."""

    def __init__(self) -> None:
        self.seen: dict[int, int] = {}  # id -> position: a cycle or a repeat is its position

    def describe(self, obj: Any) -> Any:
        if isinstance(obj, _VALUES):
            return (type(obj), obj)
        if isinstance(obj, (tuple, frozenset)):
            items = sorted(obj, key=repr) if isinstance(obj, frozenset) else obj
            return (type(obj), tuple(self.describe(item) for item in items))
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        if id(obj) in self.seen:
            return ("seen", self.seen[id(obj)])
        if len(self.seen) >= MAX_OBJECTS:
            raise _Unknown
        self.seen[id(obj)] = len(self.seen)
        if isinstance(obj, types.FunctionType) and _is_user_code(obj.__code__):
            return self._function(obj)
        if isinstance(obj, type) and _is_user_class(obj):
            return self._class(obj)
        try:
            return _Same(obj)
        except TypeError:
            pass
        try:  # no weak reference: a hashable object (torch.device, a dtype) compares by value
            hash(obj)
        except TypeError:
            raise _Unknown from None
        return (type(obj), obj)

    def _function(self, fn: types.FunctionType) -> tuple[Any, ...]:
        closure = tuple(self.describe(c.cell_contents) for c in fn.__closure__ or ()
                        if _filled(c))
        names = sorted(_global_names(fn.__code__))
        reached = tuple((n, self.describe(fn.__globals__[n])) for n in names
                        if n in fn.__globals__)
        return (_Same(fn), fn.__code__, self.describe(fn.__defaults__),
                self.describe(tuple(sorted((fn.__kwdefaults__ or {}).items(),
                                           key=lambda item: item[0]))), closure, reached)

    def _class(self, cls: type) -> tuple[Any, ...]:
        members = tuple((name, self.describe(_unwrapped(value)))
                        for name, value in vars(cls).items() if _compared_member(value))
        return (_Same(cls), tuple(self.describe(base) for base in cls.__bases__), members)


def _global_names(code: types.CodeType) -> set[str]:
    """Every name ``code`` and the code nested in it look up (globals and attributes alike)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _unwrapped(value: Any) -> Any:
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    if isinstance(value, property):
        return (value.fget, value.fset, value.fdel)
    return value


def _compared_member(value: Any) -> bool:
    """Class members that are code: functions, their wrappers, nested classes."""
    return isinstance(value, (types.FunctionType, staticmethod, classmethod, property, type))


def _is_user_code(code: types.CodeType) -> bool:
    from skyline_nb.profiler.stacks import is_user_file

    return cells.lookup(code.co_filename) is not None or is_user_file(code.co_filename)


def _is_user_class(cls: type) -> bool:
    """A class defined in the notebook (module ``__main__``) or in a user file."""
    from skyline_nb.profiler.stacks import is_user_file

    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return cls.__module__ == "__main__" or (file is not None and is_user_file(file))


class Latest:
    """The latest profile a widget showed and what it was made from (``-o`` exports it while
    ``current``). ``request`` is a ``request.ProfileRequest``: the providers (``resolve()``) and the
    options every profile of one widget shares."""

    def __init__(self) -> None:
        self.report: Report | None = None
        self.made: Made | None = None

    def remembering(self, request: Any, profile_fn: Callable[..., Report]) -> Callable[..., Report]:
        """``profile_fn`` recording each report it returns with the record made before it ran."""

        def profile(*providers: Any, **options: Any) -> Report:
            made = _made(request, options.get("batch_size"))
            report = profile_fn(*providers, **options)
            self.report, self.made = report, made
            return report

        return profile

    def joined(self, shown: Report, now: Report) -> None:
        """A widget's report ``shown`` became ``now`` ("Measure at N" joined its samples): where
        ``shown`` was the latest, ``-o`` and ``last_report()`` give what that widget shows."""
        if self.report is shown:
            self.report = now

    def current(self, request: Any, batch_size: int | None) -> Report | None:
        """The latest report, if profiling ``request`` at ``batch_size`` now would be made from
        the same; else None. ``batch_size`` None: the variable named by ``--batch-size-var``,
        else the input provider's default, as a profile takes it."""
        if self.made is None or self.made != _made(request, batch_size):
            return None
        return self.report


def _made(request: Any, batch_size: int | None) -> Made:
    """The record of profiling ``request`` at ``batch_size``; None: the size a profile takes
    then (the ``--batch-size-var`` variable, else the input provider's default), so that the
    widget's Re-profile, which names the report's size, records what ``%skyline`` without
    ``--batch-size`` does."""
    providers = request.resolve()
    if batch_size is None and request.batch_size_var:
        batch_size = request.namespace.get(request.batch_size_var)
    if batch_size is None:
        with contextlib.suppress(TypeError, ValueError, KeyError):
            batch_size = inspect.signature(providers[1]).parameters["batch_size"].default
    return made(providers, batch_size, request.device, request.predict, request.memory_budget)

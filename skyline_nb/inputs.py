"""The user's input provider as the magic reads it: where its cell's batch-size literal is, and
how a provider that reads a module-level variable takes ``batch_size``."""

from __future__ import annotations

import functools
import inspect
import os
import types
from collections.abc import Callable
from typing import Any

from skyline_nb.entry import UsageError, int_variable
from skyline_nb.source import DEFAULT_VARIABLE


def code_of(fn: Callable[..., Any]) -> types.CodeType | None:
    """The code of the function ``fn`` calls, through ``functools.partial`` and decorators
    that say what they wrap (where it was defined: a notebook cell, a file); None for a
    callable without code of its own (an object with ``__call__``, a builtin)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    try:
        code = getattr(inspect.unwrap(fn), "__code__", None)
    except ValueError:  # a cycle of ``__wrapped__``
        return None
    return code if isinstance(code, types.CodeType) else None


def own_code(input_p: Callable[..., Any]) -> types.CodeType | None:
    """The code of the function whose ``batch_size`` default the profile sets: ``input_p``'s
    (``code_of``), also through a ``functools.partial`` that binds no batch size
    (``partial(make_batch, seq_len=128)``: ``make_batch``'s default is the literal); None for
    a partial that binds it (its own argument, not the def's default, is the batch size the
    user runs)."""
    bound = functools.partial
    while isinstance(input_p, bound) and not input_p.args and "batch_size" not in input_p.keywords:
        input_p = input_p.func
    return None if isinstance(input_p, bound) else code_of(input_p)


def def_name(input_p: Callable[..., Any]) -> str | None:
    """The name of the ``def`` that made ``input_p`` (``own_code``), where its batch-size
    literal is looked for (``source.find_batch_size_literal``'s ``provider_name``):
    ``make_inputs`` for ``%skyline -i make_inputs``, and for ``skyline_input_provider =
    make_inputs`` too, whose cell has no ``def skyline_input_provider``. None for a lambda or
    a callable object: the default names."""
    code = own_code(input_p)
    name = code.co_name if code is not None else None
    return name if name is not None and name.isidentifier() else None


NOT_IN_A_CELL = "the input provider was not defined in a notebook cell of this session"


def outside_cells(input_p: Callable[..., Any]) -> str:
    """Why no notebook cell holds the batch-size literal of ``input_p``: the file it came from
    where that is one on disk (a module the notebook imported), with what to do."""
    code = own_code(input_p) or code_of(input_p)
    if code is None or not os.path.isfile(code.co_filename):  # a cell's name is no file
        return NOT_IN_A_CELL
    return (f"the input provider {code.co_name} comes from {code.co_filename}, line "
            f"{code.co_firstlineno}, not from a notebook cell: the widget edits the batch size "
            "in notebook cells only; change it in that file, or define the input provider in "
            "a cell")


def batch_variable(input_p: Callable[..., Any], namespace: dict[str, Any]) -> str | None:
    """The notebook variable that sets the batch size of an input provider without a
    ``batch_size`` parameter (or with one without a default), where ``--batch-size-var``
    named none: ``batch_size`` where the provider reads an int of that name (or the notebook
    has one to pass it), the name the cell's literal is looked for by too, as the option
    would; raises ``UsageError`` naming the option where it reads other ints (``BATCH_SIZE =
    24``: the profiler can set no batch size it does not know); else None (the profiler says
    what the provider needs)."""
    try:
        param = inspect.signature(input_p).parameters.get("batch_size")
    except (TypeError, ValueError):  # no signature to read: the profiler says so
        return None
    if param is not None:  # without a default, the notebook's ``batch_size`` supplies it
        passed = param.default is param.empty and _an_int(namespace.get(DEFAULT_VARIABLE))
        return DEFAULT_VARIABLE if passed else None
    read = [name for name in _globals_read(input_p) if _an_int(namespace.get(name))]
    if DEFAULT_VARIABLE in read:
        return DEFAULT_VARIABLE
    if not read:
        return None
    first = next((name for name in read if "batch" in name.lower()), read[0])
    name = getattr(input_p, "__name__", "skyline_input_provider")
    values = ", ".join(f"{n} = {namespace[n]}" for n in read)
    raise UsageError(
        f"the input provider {name} takes no `batch_size` parameter and reads {values} from the "
        f"notebook: `%skyline --batch-size-var {first}` has the profiler set it at each batch "
        f"size it measures, or give the provider one: def {name}(batch_size={first})")


def _an_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _globals_read(fn: Callable[..., Any]) -> list[str]:
    """The names ``fn``'s code (``own_code``, and the functions, lambdas and comprehensions in
    it) looks up beyond its locals, in order, once each: globals, and attribute names among
    them."""
    code = own_code(fn)
    names: list[str] = []
    todo = [code] if code is not None else []
    while todo:
        current = todo.pop(0)
        names += [n for n in current.co_names if n not in names]
        todo += [c for c in current.co_consts if inspect.iscode(c)]
    return names


def variable_input_provider(input_p: Callable[..., Any], namespace: dict[str, Any],
                            variable: str) -> Callable[..., Any]:
    """An input provider taking ``batch_size`` for one that reads a module-level variable.

    The profiler samples several batch sizes by calling ``input_provider(batch_size=N)``; a
    provider that reads ``batch_size`` (or ``--batch-size-var``) from the notebook's globals
    gets the global set to N for the call and restored right after, whatever happens.
    """
    params = inspect.signature(input_p).parameters
    if "batch_size" in params and params["batch_size"].default is not inspect.Parameter.empty:
        return input_p  # the signature default is the batch size; nothing to bridge
    default = int_variable(namespace, variable)

    def provider(batch_size: int = default) -> Any:
        missing = object()
        old = namespace.get(variable, missing)
        namespace[variable] = batch_size
        try:
            return input_p(batch_size) if "batch_size" in params else input_p()
        finally:
            if old is missing:
                namespace.pop(variable, None)
            else:
                namespace[variable] = old

    # No __wrapped__: inspect.signature would follow it back to the signature being bridged.
    provider.__name__ = getattr(input_p, "__name__", "input_provider")
    return provider

"""The user's input provider as the magic's widget reads it: where its cell's batch-size literal
is, and how a provider that reads a module-level variable takes ``batch_size``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from skyline_nb.entry import int_variable


def def_name(input_p: Callable[..., Any]) -> str | None:
    """The name of the ``def`` that made ``input_p``, where its batch-size literal is looked
    for (``source.find_batch_size_literal``'s ``provider_name``): ``make_inputs`` for
    ``%skyline -i make_inputs``, and for ``skyline_input_provider = make_inputs`` too, whose
    cell has no ``def skyline_input_provider``. None for a lambda or a callable object: the
    default names."""
    code = getattr(inspect.unwrap(input_p), "__code__", None)
    name = getattr(code, "co_name", None)
    return name if isinstance(name, str) and name.isidentifier() else None


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

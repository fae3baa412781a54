"""Which providers a widget profiles (``request.ProfileRequest.resolve``): those it was made
from, replaced by what the names give only where that comes from the same cell or file."""

from __future__ import annotations

import functools

import pytest

from skyline_nb import cells
from skyline_nb.request import ProfileRequest, origin


@pytest.fixture(autouse=True)
def _registry():
    cells.clear()
    yield
    cells.clear()


def defined_in(cell_id: str | None, run: int, code: str) -> dict:
    """Run ``code`` as a notebook cell: compiled under a name of its own, registered under
    ``cell_id`` (None: a cell that ran before ``%load_ext``), and return its names."""
    name = f"<cell {cell_id} run {run}>"
    cells.register(name, cell_id, code)
    namespace: dict = {}
    exec(compile(code, name, "exec"), namespace)
    return namespace


PROVIDERS = """
def skyline_model_provider():
    return {model!r}

def skyline_input_provider(batch_size=8):
    return batch_size

def skyline_iteration_provider(model):
    return print
"""
NAMES = ("skyline_model_provider", "skyline_input_provider", "skyline_iteration_provider")


def request_over(notebook: dict) -> ProfileRequest:
    return ProfileRequest(find=lambda: tuple(notebook[n] for n in NAMES))


def models(request: ProfileRequest) -> str:
    return request.resolve()[0]()


def test_a_widget_keeps_its_providers_where_another_cell_defines_the_names_again() -> None:
    notebook = defined_in("a", 1, PROVIDERS.format(model="A"))
    request = request_over(notebook)
    assert models(request) == "A"
    notebook.update(defined_in("c", 2, PROVIDERS.format(model="B")))  # a second model, cell c
    assert models(request) == "A"
    assert request_over(notebook).resolve()[0]() == "B"  # a new %skyline profiles cell c's


def test_the_same_cell_run_again_replaces_them() -> None:
    notebook = defined_in("a", 1, PROVIDERS.format(model="A"))
    request = request_over(notebook)
    assert models(request) == "A"
    notebook.update(defined_in("a", 2, PROVIDERS.format(model="A2")))  # edited and run again
    assert models(request) == "A2"


def test_only_the_provider_defined_again_in_its_own_cell_is_replaced() -> None:
    notebook = defined_in("a", 1, PROVIDERS.format(model="A"))
    request = request_over(notebook)
    request.resolve()
    other = defined_in("c", 2, PROVIDERS.format(model="B"))
    notebook["skyline_model_provider"] = other["skyline_model_provider"]  # cell c: a model only
    again = defined_in("a", 3, PROVIDERS.format(model="A"))
    notebook["skyline_input_provider"] = again["skyline_input_provider"]
    model_p, input_p, _ = request.resolve()
    assert model_p() == "A" and input_p is again["skyline_input_provider"]


def test_rebind_takes_what_the_names_give() -> None:
    notebook = defined_in("a", 1, PROVIDERS.format(model="A"))
    request = request_over(notebook)
    request.resolve()
    notebook.update(defined_in("c", 2, PROVIDERS.format(model="B")))
    request.rebind()
    assert models(request) == "B"


def test_names_gone_leave_the_providers_held() -> None:
    notebook = defined_in("a", 1, PROVIDERS.format(model="A"))
    request = request_over(notebook)
    request.resolve()
    notebook.clear()  # del skyline_model_provider, …
    assert models(request) == "A"
    with pytest.raises(KeyError):  # never resolved: the error reaches the user
        request_over(notebook).resolve()


def test_where_a_provider_comes_from() -> None:
    first = defined_in(None, 1, PROVIDERS.format(model="A"))  # ran before %load_ext: no id
    fn, name = first["skyline_input_provider"], "skyline_input_provider"
    assert origin(fn) == ("<cell None run 1>", name)
    cells.name_cell("<cell None run 1>", "x")  # the front end found its id by its text
    assert origin(fn) == ("x", name)
    assert origin(functools.partial(fn, batch_size=3)) == ("x", name)
    assert origin(functools.wraps(fn)(lambda *a: fn(*a))) == ("x", name)
    assert origin(print) is None and origin(functools.partial(print)) is None
    assert origin(origin) == (origin.__code__.co_filename, "origin")  # a module's function


def test_two_functions_of_one_module_are_two_origins() -> None:
    """``from mymodels import make_a as skyline_model_provider``, then ``make_b`` as it."""
    module = defined_in(None, 1, "def make_a():\n    return 'A'\n\ndef make_b():\n    return 'B'\n")
    notebook = {n: module["make_a"] for n in NAMES}
    request = request_over(notebook)
    assert models(request) == "A"
    notebook["skyline_model_provider"] = module["make_b"]
    assert models(request) == "A"

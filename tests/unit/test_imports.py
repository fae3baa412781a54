"""The imports inside skyline_nb, read from the source with ``ast`` (nothing is imported).

Module-level imports run when a module is first imported: a cycle among them makes the result
depend on which module is imported first and can expose a half-initialised module, so there
must be none. Imports inside a function run when it is called; they are listed apart, since a
lazy import back up the layers (``Report.save_sqlite`` importing its exporter) is no cycle.
Imports under ``if TYPE_CHECKING:`` never run and are left out. Importing ``a.b.c`` imports the
packages ``a`` and ``a.b`` too, so they count as imported (unless they contain the importing
module: they are imported before it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "skyline_nb"
# The notebook and command-line side: the profiler must not import these, even lazily.
FRONT_END = ("cellbody", "cells", "cli", "cli_args", "entry", "live", "magic", "source", "widget")


@dataclass
class Imports:
    module_level: set[str] = field(default_factory=set)
    function_level: set[str] = field(default_factory=set)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _deepest(name: str) -> str | None:
    """The package's module that ``import name`` ends in (None: not the package's)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    """What ``node`` in ``module`` imports: each named module and the packages above it, except
    ``module``'s own packages, which are always imported before ``module`` itself."""
    if isinstance(node, ast.Import):
        named = {_deepest(alias.name) for alias in node.names}
    else:
        base = node.module or ""
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}" if base else anchor
        # `from pkg import name`: `name` is a submodule of pkg, or else an attribute of pkg.
        named = {_deepest(f"{base}.{alias.name}") for alias in node.names}
    own = {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
    found = set()
    for name in named - {None}:
        parts = name.split(".")
        found.add(name)
        found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return found - own - {module} | (named & own)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING", "typing.TYPE_CHECKING")


def imports_of(module: str) -> Imports:
    """The package modules ``module`` imports, at module level and inside functions."""
    found = Imports()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            lazy = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names = _targets(child, module)
                (found.function_level if lazy else found.module_level).update(names)
            visit(child, lazy)

    visit(ast.parse(MODULES[module].read_text(encoding="utf-8")), False)
    return found


IMPORTS = {module: imports_of(module) for module in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, str] = {}  # "open" while on the path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_walk_sees_both_kinds_of_import() -> None:
    report = IMPORTS["skyline_nb.report"]
    assert "skyline_nb.models.performance" in report.module_level
    assert "skyline_nb.export.sqlite" in report.function_level
    assert "skyline_nb.profiler.session" in IMPORTS["skyline_nb"].function_level
    assert "skyline_nb.export" in IMPORTS["skyline_nb.export.sqlite"].module_level


def test_cycle_search_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_cycle_among_module_level_imports() -> None:
    cycle = _cycle({module: found.module_level for module, found in IMPORTS.items()})
    assert cycle is None, "module-level import cycle: " + " -> ".join(cycle or [])


def test_report_imports_no_exporter_at_module_level() -> None:
    exporters = {m for m in MODULES if m.startswith("skyline_nb.export.")}
    assert not IMPORTS["skyline_nb.report"].module_level & exporters


@pytest.mark.parametrize("module", [m for m in MODULES if m.startswith("skyline_nb.profiler")])
def test_the_profiler_imports_nothing_of_the_notebook_or_command_line(module: str) -> None:
    found = IMPORTS[module]
    front_end = {f"skyline_nb.{name}" for name in FRONT_END}
    assert not (found.module_level | found.function_level) & front_end

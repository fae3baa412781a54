"""Find, and rewrite, the batch-size integer literal in a notebook cell.

Dragging a bar in the widget picks a new batch size; the edit that lands in the user's cell must
change the characters of exactly one integer literal and nothing else, or not happen at all. So
the literal is found through the AST (a comment or a string holding ``batch_size = 3`` can never
match), re-found in the *current* text before every edit (the user may have typed since the
profile), and anything doubtful is refused with a sentence the widget can show.

Which literal is the batch size, in order of precedence:

1. The input provider is the top-level ``def skyline_input_provider`` of the cell (or
   ``deepview_input_provider`` when there is no Skyline one; or exactly ``provider_name``), or
   a top-level assignment of a ``lambda`` or a ``functools.partial(f, ..., batch_size=32)`` to
   that name (the partial's keyword is its default; a partial that binds no batch size is
   followed to ``f``'s ``def`` by the caller, ``inputs.def_name``). Defs nested in functions or
   classes are not the provider. Two top-level definitions of it, or an ``async def``, are
   refused.
2. If its ``batch_size`` parameter has an integer-literal default, that literal is the target
   (any signature layout: annotations, several lines, positional-only, keyword-only, decorators).
   If ``variable`` was given and the provider body also reads that global, both decide the batch
   size and the edit is refused as ambiguous.
3. If the default is a bare name (``batch_size=BATCH``), the target is that module-level variable
   (``variable``, when given, must be that name).
4. If ``batch_size`` has no default (the caller supplies it from the variable) or the provider
   has no such parameter but its body reads the variable as a global, the target is the
   module-level ``variable = <int>`` / ``variable: int = <int>`` (``variable`` defaults to
   ``batch_size``).
5. With no provider in the cell, the module-level variable is the target only when ``variable``
   was given explicitly (the magic's ``--batch-size-var``); otherwise the provider has gone from
   the cell and editing some other ``batch_size`` would be a guess.

A module-level variable must be bound exactly once at module scope (``+=``, tuple unpacking,
imports, ``for`` targets and ``global`` writes in functions all count as bindings).

Only decimal literals are edited, each in its own spelling: plain digits, or digits grouped in
threes by underscores (``2_000_000``, PEP 515's usual grouping), which a new value keeps
(``spell``). ``0x20``, ``0o40``, ``3_2`` are refused rather than rewritten in a different
spelling; so are ``True``, negative numbers, zero and expressions.

IPython-only lines (a first-line ``%%skyline``, ``%time ...``, ``!cmd``, ``x = !cmd``) are turned
into same-length Python before parsing (``ipython_lines``), so every offset refers to the
original cell text. Offsets are given twice: Python ``str`` indices (``start``/``end``) and
UTF-16 code-unit indices (``start_utf16``/``end_utf16``) for the front end, whose editors index
JavaScript strings: the kernel is the one authority on where the literal is, and the front end
applies its ``LiteralEdit`` without counting characters itself.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Literal

from skyline_nb.ipython_lines import EOL, NotPython, as_python

DEFAULT_PROVIDER_NAMES = ("skyline_input_provider", "deepview_input_provider")
DEFAULT_VARIABLE = "batch_size"
PARAMETER = "batch_size"

_DECIMAL = re.compile(r"[0-9]+|[1-9][0-9]{0,2}(?:_[0-9]{3})+")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

Target = Literal["signature_default", "module_variable"]


class SourceEditRefused(ValueError):
    """The cell cannot be edited safely; ``str(exc)`` is a sentence to show the user."""


@dataclass(frozen=True)
class LiteralLocation:
    """Where the batch-size literal is. ``code[start:end] == text`` and ``int(text) == value``."""

    start: int  # Python str index into the original cell text
    end: int
    start_utf16: int  # the same positions in UTF-16 code units (JavaScript string indices)
    end_utf16: int
    line: int  # 1-based, as the user sees it
    value: int
    text: str
    target: Target
    name: str  # the provider function for "signature_default", the variable otherwise

    def describe(self) -> str:
        if self.target == "signature_default":
            return f"the default of `{PARAMETER}` in `{self.name}` (line {self.line})"
        return f"`{self.name} = {self.text}` at module level (line {self.line})"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "description": self.describe()}


def _parse(code: str) -> ast.Module:
    try:
        python = as_python(code)
    except NotPython as exc:
        raise SourceEditRefused(str(exc)) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "\d" in user strings must not become an error
            return ast.parse(python)
    except (SyntaxError, ValueError, UnicodeError) as exc:  # null bytes, lone surrogates
        detail = f"line {exc.lineno}: {exc.msg}" if isinstance(exc, SyntaxError) else str(exc)
        raise SourceEditRefused(f"the cell does not parse as Python ({detail})") from None


def find_batch_size_literal(
    code: str, *, provider_name: str | None = None, variable: str | None = None
) -> LiteralLocation:
    """Locate the batch-size literal in ``code`` (one cell) or raise ``SourceEditRefused``.

    ``provider_name=None`` looks for ``skyline_input_provider``, then ``deepview_input_provider``.
    ``variable`` is the magic's ``--batch-size-var``; see the module docstring for precedence.
    """
    tree = _parse(code)
    names = (provider_name,) if provider_name is not None else DEFAULT_PROVIDER_NAMES
    found = _find_provider(tree, names)
    var = variable or DEFAULT_VARIABLE
    if found is None:
        if variable is None:
            raise SourceEditRefused(f"no top-level `def {' or '.join(names)}` in this cell")
        return _module_variable(code, tree, var, "")
    name, fn = found
    param, default = _batch_size_param(fn)
    if isinstance(default, ast.Name):
        if variable is not None and default.id != variable:
            raise SourceEditRefused(f"`{name}` reads `{default.id}`, not `{variable}`")
        return _module_variable(code, tree, default.id, f", which `{name}` reads")
    if default is not None:
        what = f"the default of `{PARAMETER}` in `{name}`"
        node = _int_literal(default, what)
        if variable is not None and _reads_global(fn, variable):
            raise SourceEditRefused(f"ambiguous: {what} and the global `{variable}` both set it")
        return _locate(code, node, "signature_default", name, what)
    if param is not None or _reads_global(fn, var):
        return _module_variable(code, tree, var, f", which `{name}` needs")
    if isinstance(fn, ast.Call):
        raise SourceEditRefused(f"`{name}` is a partial without a `{PARAMETER}=` keyword "
                                f"(write it as one: `{ast.unparse(fn.func)}(…, {PARAMETER}=32)`)")
    raise SourceEditRefused(f"`{name}` has no `{PARAMETER}` parameter and does not read `{var}`")


@dataclass(frozen=True)
class LiteralEdit:
    """Setting the batch size: the literal at ``location`` becomes ``text``.

    The one edit of the literal, whichever language applies it: ``apply`` here, and the front
    end's one writer (``writeEdit`` in ``js/shared/write.js``) from ``for_editor()``.
    """

    location: LiteralLocation
    text: str

    def apply(self, code: str) -> str:
        """``code``, the text the edit was planned on, with the literal replaced by ``text``."""
        return code[: self.location.start] + self.text + code[self.location.end :]

    def for_editor(self) -> dict[str, Any]:
        """The edit in UTF-16 code units (JavaScript string indices), applied verbatim by the
        front end: replace ``[start, end)``, which must still read ``expected``, by ``text``."""
        loc = self.location
        return {"start": loc.start_utf16, "end": loc.end_utf16, "expected": loc.text,
                "text": self.text}


def plan_edit(
    code: str,
    new_value: int,
    *,
    provider_name: str | None = None,
    variable: str | None = None,
    expected_value: int | None = None,
) -> LiteralEdit:
    """The edit that sets the batch size in ``code`` (the cell as it is now) to ``new_value``.

    Raises ``SourceEditRefused`` when the literal cannot be found safely, or, when
    ``expected_value`` is given, when the literal no longer holds it (the user typed another
    value by hand since: a caller that applies a drag later, not at once, lets the hand win).
    """
    if not isinstance(new_value, int) or isinstance(new_value, bool):
        raise TypeError(f"new_value must be an int, not {type(new_value).__name__}")
    if new_value < 1:
        raise SourceEditRefused(f"a batch size must be at least 1, not {new_value}")
    loc = find_batch_size_literal(code, provider_name=provider_name, variable=variable)
    if expected_value is not None and loc.value != expected_value:
        raise SourceEditRefused(f"{loc.describe()} is now {loc.value}, not {expected_value}")
    return LiteralEdit(loc, spell(new_value, loc.text))


def spell(value: int, like: str) -> str:
    """``value`` written as the literal ``like`` is: in threes by underscores when it is
    (``1_500_000`` for ``2_000_000``), else plain digits. js/src/edit.js spells it alike."""
    return f"{value:_}" if "_" in like else str(value)


def rewrite_batch_size(
    code: str,
    new_value: int,
    *,
    provider_name: str | None = None,
    variable: str | None = None,
    expected_value: int | None = None,
) -> str:
    """``code`` with the batch-size literal replaced by ``new_value``; nothing else changes.

    The one Python writer of the literal. Raises ``SourceEditRefused`` as ``plan_edit`` does.
    """
    edit = plan_edit(code, new_value, provider_name=provider_name, variable=variable,
                     expected_value=expected_value)
    return edit.apply(code)


def locate_for_edit(
    code: str,
    new_value: int,
    *,
    provider_name: str | None = None,
    variable: str | None = None,
) -> dict[str, Any]:
    """``plan_edit`` as a JSON-ready answer for the front end; never raises for a refused edit.

    ``{"ok": True, **LiteralLocation.as_dict(), "edit": LiteralEdit.for_editor()}``: the front
    end applies ``edit`` verbatim. ``{"ok": False, "reason": "..."}``: show it, edit nothing.
    """
    try:
        edit = plan_edit(code, new_value, provider_name=provider_name, variable=variable)
    except SourceEditRefused as exc:
        return {"ok": False, "reason": str(exc)}
    return {"ok": True, **edit.location.as_dict(), "edit": edit.for_editor()}


Provider = ast.FunctionDef | ast.Lambda | ast.Call


def _find_provider(tree: ast.Module, names: tuple[str, ...]) -> tuple[str, Provider] | None:
    """The first of ``names`` the cell defines at top level, and how: a ``def``, or an
    assignment of a ``lambda`` or of a ``functools.partial(...)`` call (whose ``batch_size``
    keyword is the default the profiler overrides)."""
    for name in names:
        found = [node for node in tree.body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name]
        found += [node.value for node in tree.body if isinstance(node, ast.Assign)
                  and [ast.unparse(t) for t in node.targets] == [name] and _made(node.value)]
        if len(found) > 1:
            lines = ", ".join(str(node.lineno) for node in found)
            raise SourceEditRefused(
                f"ambiguous: `{name}` is defined {len(found)} times (lines {lines})"
            )
        if found:
            if isinstance(found[0], ast.AsyncFunctionDef):
                raise SourceEditRefused(f"`{name}` is an `async def`; it must be a plain function")
            return name, found[0]
    return None


def _made(value: ast.expr) -> bool:
    """A ``lambda``, or a call of ``partial`` / ``functools.partial``."""
    return isinstance(value, ast.Lambda) or (
        isinstance(value, ast.Call) and ast.unparse(value.func) in ("partial", "functools.partial"))


def _batch_size_param(fn: Provider) -> tuple[ast.arg | None, ast.expr | None]:
    """The ``batch_size`` parameter (positional-only, ordinary or keyword-only) and its default;
    for a partial, no parameter and its ``batch_size`` keyword."""
    if isinstance(fn, ast.Call):
        return None, next((k.value for k in fn.keywords if k.arg == PARAMETER), None)
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults + args.kw_defaults
    for arg, default in zip([*positional, *args.kwonlyargs], defaults, strict=True):
        if arg.arg == PARAMETER:
            return arg, default
    return None, None


def _reads_global(fn: Provider, var: str) -> bool:
    """Whether the provider's body reads ``var`` as a global (not a parameter or a local)."""
    if isinstance(fn, ast.Call):  # a partial's function reads what its own def says
        return False
    args = fn.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    nodes = [node for stmt in ([fn.body] if isinstance(fn, ast.Lambda) else fn.body)
             for node in ast.walk(stmt)]
    declared = {name for node in nodes if isinstance(node, ast.Global) for name in node.names}
    params |= {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    if var in params and var not in declared:  # a parameter or a local: not the global
        return False
    return any(
        isinstance(node, ast.Name) and node.id == var and isinstance(node.ctx, ast.Load)
        for node in nodes
    )


def _module_variable(code: str, tree: ast.Module, var: str, why: str) -> LiteralLocation:
    bindings = _module_bindings(tree, var)
    if not bindings:
        raise SourceEditRefused(f"no module-level `{var} = <int>` in this cell{why}")
    if len(bindings) > 1:
        lines = ", ".join(str(node.lineno) for node, _ in bindings)
        raise SourceEditRefused(
            f"ambiguous: `{var}` is assigned {len(bindings)} times at module level (lines {lines})"
        )
    node, value = bindings[0]
    if value is None:
        raise SourceEditRefused(
            f"`{var}` on line {node.lineno} is not a plain `{var} = <int>` assignment"
        )
    what = f"`{var}` at module level"
    return _locate(code, _int_literal(value, what), "module_variable", var, what)


def _module_bindings(tree: ast.Module, var: str) -> list[tuple[Any, ast.expr | None]]:
    """Every binding of ``var`` in module scope, with the value when it is a plain assignment.

    Function and class bodies are other scopes, except for their ``global var`` writes;
    decorators, defaults and bases are evaluated in module scope and are searched.
    """
    found: list[tuple[Any, ast.expr | None]] = []

    def visit(node: ast.AST, parent: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id == var and not isinstance(node.ctx, ast.Load):
                if isinstance(parent, ast.AnnAssign) and parent.value is None:
                    return  # a bare annotation binds nothing
                plain = isinstance(parent, (ast.Assign, ast.AnnAssign))
                found.append((parent if plain else node, parent.value if plain else None))
            return
        if isinstance(node, ast.alias):
            if (node.asname or node.name.split(".")[0]) == var:
                found.append((node, None))
            return
        if getattr(node, "name", None) == var or getattr(node, "rest", None) == var:
            found.append((node, None))  # def/class/except-as/match capture named var
        if isinstance(node, _SCOPES):
            body = node.body if isinstance(node.body, list) else [node.body]
            inner = [n for stmt in body for n in ast.walk(stmt)]
            declared = any(isinstance(n, ast.Global) and var in n.names for n in inner)
            stored = any(
                isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store)
                for n in inner
            )
            if declared and stored:
                found.append((node, None))
            args = getattr(node, "args", None)
            outer = [getattr(node, f, []) for f in ("decorator_list", "bases", "keywords")]
            outer = [child for children in outer for child in children]
            if isinstance(args, ast.arguments):
                outer += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            for child in outer:
                visit(child, node)
            return
        for field, child in ast.iter_fields(node):
            if isinstance(node, ast.comprehension) and field == "target":
                continue  # a comprehension's loop variable is local to it
            for item in child if isinstance(child, list) else [child]:
                if isinstance(item, ast.AST):
                    visit(item, node)

    for stmt in tree.body:
        visit(stmt, tree)
    found.sort(key=lambda pair: (pair[0].lineno, pair[0].col_offset))
    return found


def _int_literal(node: ast.expr, what: str) -> ast.Constant:
    if not isinstance(node, ast.Constant):  # `2 ** 5`, `-8`, `BATCH * 2`, `len(data)`...
        raise SourceEditRefused(f"{what} is `{ast.unparse(node)}`, not a literal such as `32`")
    if isinstance(node.value, bool) or type(node.value) is not int:
        kind = "bool" if isinstance(node.value, bool) else type(node.value).__name__
        raise SourceEditRefused(f"{what} is `{node.value!r}`, a {kind}, not an integer literal")
    if node.value < 1:
        raise SourceEditRefused(f"{what} is {node.value}; a batch size must be at least 1")
    return node


def _locate(code: str, node: ast.Constant, target: Target, name: str, what: str) -> LiteralLocation:
    """Turn the node's (line, UTF-8 byte column) into str and UTF-16 offsets into ``code``."""
    assert node.end_lineno == node.lineno and node.end_col_offset is not None
    parts = EOL.split(code)
    line_start = sum(map(len, parts[: 2 * node.lineno - 2]))
    raw = parts[2 * node.lineno - 2].encode("utf-8")
    start = line_start + len(raw[: node.col_offset].decode("utf-8"))
    end = line_start + len(raw[: node.end_col_offset].decode("utf-8"))
    text = code[start:end]
    if not _DECIMAL.fullmatch(text):
        raise SourceEditRefused(
            f"{what} is written `{text}`; only decimal literals like `32` or `2_000_000` are edited"
        )
    before = sum(1 for ch in code[:start] if ord(ch) > 0xFFFF)  # astral chars: 2 UTF-16 units
    utf16 = (start + before, end + before)  # the literal itself is ASCII
    return LiteralLocation(start, end, *utf16, node.lineno, node.value, text, target, name)

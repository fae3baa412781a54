"""IPython-only lines of a cell, turned into Python of the same length.

A notebook cell may hold lines that only IPython understands: a first-line cell magic
(``%%skyline``), line magics (``%time f()``), shell escapes (``!ls``) and their assignments
(``files = !ls``). ``as_python`` replaces each such line, where it starts a logical line (as
IPython's transformers see it), by a same-length stand-in (``0#...``, ``_#...``), so that
``ast.parse`` accepts the cell and every AST position maps straight back onto the text the user
sees. The body of a cell magic other than the Python ones (``%%bash``, ``%%html``...) is not
Python: such a cell is refused.
"""

from __future__ import annotations

import re

# Cell magics whose body is Python; the body of any other (%%bash, %%html...) is never edited.
PYTHON_CELL_MAGICS = frozenset({"skyline", "time", "timeit", "capture", "prun", "debug"})

EOL = re.compile(r"(\r\n|\r|\n)")  # the line breaks Python's tokenizer knows (not splitlines)
_ASSIGN_MAGIC = re.compile(r"\s*[^\W\d][\w.]*(?:\s*,\s*[^\W\d][\w.]*)*\s*=\s*(?=[%!])")


class NotPython(ValueError):
    """The cell's body is not Python (a ``%%bash`` cell...); ``str(exc)`` says why."""


def as_python(code: str) -> str:
    """The cell with IPython-only lines replaced by same-length Python (``%time f()`` -> ``0#ime
    f()``), as IPython's transformers would remove them; every character position and line break
    is unchanged, so AST positions map straight back onto ``code``. Only lines that start a
    logical line are touched: a ``%`` continuing an expression or inside a string is Python."""
    parts = EOL.split(code)  # line, break, line, break, ..., line
    first, continued = True, False
    depth, quote = 0, ""  # bracket depth and the open string's delimiter carried across lines
    for k in range(0, len(parts), 2):
        if depth == 0 and not quote and not continued:
            parts[k] = _neutralize_line(parts[k], first)
            first = first and not parts[k].strip()
        depth, quote, continued = _scan(parts[k], depth, quote)
    return "".join(parts)


def _neutralize_line(line: str, first: bool) -> str:
    stripped = line.lstrip()
    if first and stripped.startswith("%%"):
        name = stripped[2:].split(maxsplit=1)[0] if stripped[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            raise NotPython(f"the cell runs `%%{name}`, whose body is not Python")
    assign = _ASSIGN_MAGIC.match(line)  # `x = !cmd`: x is bound, but not to a literal
    if assign:
        at, stand_in = assign.end(), "_"
    elif stripped[:1] in ("%", "!"):
        at, stand_in = len(line) - len(stripped), "0"
    else:
        return line
    rest = line[at:]
    return line[:at] + stand_in + ("#" + rest[2:] if len(rest) > 1 else "")


def _scan(line: str, depth: int, quote: str) -> tuple[int, str, bool]:
    """Bracket depth, open string and backslash continuation after ``line``: enough to know
    whether the next line starts a logical line (where IPython looks for magics)."""
    i, n = 0, len(line)
    while i < n:
        if quote:
            if line[i] == "\\":
                i += 2
            elif line.startswith(quote, i):
                i, quote = i + len(quote), ""
            else:
                i += 1
            continue
        ch = line[i]
        if ch == "#":
            break
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch in "\"'":
            quote = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        elif ch == "\\" and i == n - 1:
            return depth, quote, True
        i += 1
    if len(quote) == 1 and not line.endswith("\\"):
        quote = ""  # an unterminated one-line string is a syntax error; don't carry it on
    return depth, quote, False

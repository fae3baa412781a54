"""Source locations in the USER's code: notebook cells or project files.

A profile is only useful if each op links to a line the user wrote, not to torch internals.
Frames are collected by walking ``sys._getframe`` (``inspect.stack`` and ``traceback`` build
line caches and cost far more, at one walk per aten op). Whether a file is the user's is
decided once per file name and cached.

User code is: a notebook cell, as the caller's ``CellLookup`` knows them (the profiler knows
nothing of notebooks; the notebook side hands it ``cells.lookup``), or a file that
``is_user_file`` accepts under the project root.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import torch

from skyline_nb.report import Frame, SourceFile

MAX_FRAMES = 16
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_EXAMPLES_DIR = _PACKAGE_DIR / "examples"


class Cell(Protocol):
    """What the profiler needs of a notebook cell that code was compiled from."""

    @property
    def cell_id(self) -> str | None: ...

    def cell_line(self, code_line: int) -> int:
        """The line in the cell, as the user sees it, of ``code_line`` of the compiled code."""

    def display_source(self) -> str:
        """The cell's text, as ``cell_line`` numbers it."""

    def where(self, line: int) -> str:
        """Line ``line`` of the cell (as ``cell_line`` gives it) named as the user sees it."""


CellLookup = Callable[[str], Cell | None]
"""Code file name (``co_filename``) -> the cell it was compiled from, or None."""


_PROFILER_DIR = str(Path(__file__).resolve().parent) + os.sep
_profiler_files: dict[str, bool] = {}


def _is_profiler(filename: str) -> bool:
    known = _profiler_files.get(filename)
    if known is None:
        known = _profiler_files[filename] = str(Path(filename).resolve()).startswith(_PROFILER_DIR)
    return known


@functools.cache
def _excluded_roots() -> tuple[str, ...]:
    roots = {str(Path(torch.__file__).resolve().parent), str(_PACKAGE_DIR)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(str(Path(path).resolve()))
    return tuple(sorted(roots))


def is_user_file(filename: str, project_root: Path | None = None) -> bool:
    """Whether ``filename`` is a file of the user's own code.

    It is when it names a real path (not ``<string>``), lies under ``project_root`` (anywhere
    when None), and is not part of torch, the standard library, an installed package or
    skyline_nb; skyline_nb's own ``examples`` count as the user's, so they can be profiled as
    such. Notebook cells are decided by a ``CellLookup``, not here.
    """
    if filename.startswith("<"):
        return False
    path = Path(filename).resolve()
    text = str(path)
    if not path.is_relative_to(_EXAMPLES_DIR) and any(
        text == root or text.startswith(root + os.sep) for root in _excluded_roots()
    ):
        return False
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return False
    return project_root is None or path.is_relative_to(project_root.resolve())


# (display file, cell id, cell) of a user file; the cell is None for project files.
_Classified = tuple[str, str | None, Cell | None]
_PROFILER, _OTHER = "profiler", "other"  # ``UserCode._kind`` of a file that is not the user's


class UserCode:
    """Decides which frames are the user's and turns them into ``Frame`` records.

    Example usage::

        user = UserCode(project_root=Path("."), cells=cells.lookup)
        frames = user.capture()   # user frames of the caller, closest first
        user.sources()            # SourceFile for each file/cell those frames touched
    """

    def __init__(self, project_root: str | Path | None, cells: CellLookup | None = None) -> None:
        """``project_root`` None: only cells are the user's; ``cells`` None: there are none."""
        self.project_root = Path(project_root).resolve() if project_root is not None else None
        self._cells = cells
        self._cache: dict[str, _Classified | None] = {}
        self._touched: dict[str, _Classified] = {}
        # file name -> _PROFILER, _OTHER or its classification: ``capture``'s one lookup a frame
        self._kinds: dict[str, _Classified | str] = {}

    # ---- classification -------------------------------------------------------------------
    def cell_of(self, filename: str) -> Cell | None:
        """The notebook cell ``filename`` was compiled from, if any."""
        return self._cells(filename) if self._cells is not None else None

    def classify(self, filename: str) -> _Classified | None:
        """(display file, cell id, cell entry) for a user file, None for anything else."""
        try:
            return self._cache[filename]
        except KeyError:
            pass
        result = self._classify(filename)
        self._cache[filename] = result
        return result

    def _classify(self, filename: str) -> _Classified | None:
        entry = self.cell_of(filename)
        if entry is not None:
            return filename, entry.cell_id, entry
        if self.project_root is None or not is_user_file(filename, self.project_root):
            return None
        return Path(filename).resolve().relative_to(self.project_root).as_posix(), None, None

    def _frame(self, filename: str, info: _Classified, line: int) -> Frame:
        display, cell_id, entry = info
        self._touched.setdefault(filename, info)
        if entry is not None:
            return Frame(file=display, line=entry.cell_line(line), cell_id=cell_id)
        return Frame(file=display, line=line)

    def _kind(self, filename: str) -> _Classified | str:
        if _is_profiler(filename):
            return _PROFILER
        info = self.classify(filename)
        return _OTHER if info is None else info

    # ---- capture --------------------------------------------------------------------------
    def capture(self, frame: FrameType | None = None) -> list[Frame]:
        """User frames from ``frame`` (default: the caller) outward, closest to the call first.

        The walk stops where the profiler called into the user's code (``Trial.step``,
        ``build_trial``): frames beyond it are whoever called ``profile()``, not the model.
        """
        current = frame if frame is not None else sys._getframe(1)
        found: list[Frame] = []
        kinds = self._kinds
        left_profiler = False
        # one dict lookup a frame, not two calls: a Hugging Face model's forward ops run up to
        # 28-35 frames deep, nearly all of them the library's (a 60-frame stack: 21-28 µs a
        # call before, 13-19 after)
        while current is not None and len(found) < MAX_FRAMES:
            filename = current.f_code.co_filename
            kind = kinds.get(filename)
            if kind is None:
                kind = kinds[filename] = self._kind(filename)
            if kind is _PROFILER:
                if left_profiler:
                    break
            else:
                left_profiler = True
                if kind is not _OTHER:
                    found.append(self._frame(filename, kind, current.f_lineno))
            current = current.f_back
        return found

    def location_of(self, function: object) -> str:
        """'Cell In[N], line L' (``Cell.where``) or 'file.py, line L' for a function, for
        error messages."""
        code = getattr(function, "__code__", None)
        if code is None:
            return repr(function)
        entry = self.cell_of(code.co_filename)
        if entry is not None:
            return entry.where(entry.cell_line(code.co_firstlineno))
        return f"{code.co_filename}, line {code.co_firstlineno}"

    # ---- sources --------------------------------------------------------------------------
    def sources(self, files: set[str] | None = None) -> list[SourceFile]:
        """The code of every cell/file that captured frames point into, each once.

        ``files`` restricts the result to the display names actually kept in a report.
        """
        result = []
        for filename, (display, cell_id, entry) in self._touched.items():
            if files is not None and display not in files:
                continue
            if entry is not None:
                code = entry.display_source()
            else:
                try:
                    code = Path(filename).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
            result.append(SourceFile(file=display, code=code, cell_id=cell_id))
        return result


def default_project_root(*providers: object, cells: CellLookup | None = None) -> Path:
    """The folder of the file defining the first of ``providers`` that is a function (a model
    provider may be a class: the input provider's file then says where the project is); the
    working folder when that function is a notebook cell's or no file defines it."""
    code = next((c for c in (getattr(f, "__code__", None) for f in providers) if c), None)
    if code is not None and (cells is None or cells(code.co_filename) is None):
        path = Path(code.co_filename)
        if path.is_file():
            return path.resolve().parent
    return Path.cwd().resolve()


def raised_at(exc: BaseException, function: Callable[..., Any]) -> str:
    """" (at line N)": the last line of ``function``'s file that ``exc`` passed through, where
    that is not the line ``where`` names (the definition's); the message named only that one,
    and the line that raised was in the chained traceback alone."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is None:
        return ""
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if frame.filename == code.co_filename]
    return f" (at line {lines[-1]})" if lines and lines[-1] != code.co_firstlineno else ""

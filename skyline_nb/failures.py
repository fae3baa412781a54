"""How a failed ``%skyline`` profile reads in the notebook: one banner, then the user's frames.

A profile fails in the user's code (a provider or the iteration raised), in a check of what the
providers returned, when memory runs out, or by an interrupt. The profiler reports the first as a
``ProviderError`` chained to the user's exception; the user needs only that exception, where in
their cell it was raised, and their own frames. Running out of memory (``ResourceError``) is no
fault of their code, though it ran out in it: the banner is the profiler's words (what does not
fit, what to try), and no frames follow (they would be autograd's and the allocator's).
``for_user`` wraps the profile function the magic hands to the widget so that every failure
leaves it as ``ProfileFailed`` (or ``ProfileInterrupted``), whose message is the banner the
widget shows:

    ProfileFailed: the iteration raised RuntimeError: boom
      at Cell In[12], line 17

A cell is named as IPython names it in tracebacks (``In[N]``, its prompt) and the line is the
line in the cell as the notebook shows it (``cells`` maps compiled lines to cell lines). In the
cell's error output IPython draws ``_render_traceback_``: the user's frames only — those from the
first frame of a notebook cell or a user file on, without skyline_nb's own — then a line saying
how to see the rest. Any later rendering (``%tb``) is the whole chained traceback.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from skyline_nb import cells

_PACKAGE = Path(__file__).resolve().parent
_EXAMPLES = _PACKAGE / "examples"  # profiled as the user's own code
HIDDEN_NOTE = "skyline_nb's own frames are hidden; %tb shows the full traceback."
# The roles of the three providers, by position in the profile function's arguments.
_ROLES = ("model provider", "input provider", "iteration provider")


class _Rendered:
    """The IPython rendering shared by both failures (``self`` is a BaseException)."""

    user_exception: BaseException | None = None
    _rendered = False

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: the short form the first time (the cell's output), then all."""
        if self._rendered:
            return _full(self)  # type: ignore[arg-type]
        self._rendered = True
        user = self.user_exception
        tb = user_traceback(user) if user is not None else None
        if user is None or tb is None:
            return [f"{type(self).__name__}: {self}", HIDDEN_NOTE]
        return [*_structured(type(user), user, tb, tb_offset=0), HIDDEN_NOTE]


class ProfileFailed(_Rendered, Exception):
    """A profile stopped by an error; ``str()`` is the banner, ``user_exception`` what the
    user's code raised (None when the profiler refused what a provider did or returned)."""

    def __init__(self, message: str, user_exception: BaseException | None = None) -> None:
        super().__init__(message)
        self.user_exception = user_exception


class ProfileInterrupted(_Rendered, KeyboardInterrupt):
    """A profile stopped by an interrupt (still a KeyboardInterrupt: loops over it stop)."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__("profiling was interrupted")
        self.user_exception = interrupt


def for_user(profile_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``profile_fn(model_p, input_p, iteration_p, **options)`` raising only the two above."""

    @functools.wraps(profile_fn)
    def profile(*providers: Any, **options: Any) -> Any:
        try:
            return profile_fn(*providers, **options)
        except KeyboardInterrupt as exc:
            raise ProfileInterrupted(exc) from exc
        except Exception as exc:
            raise failure(exc, providers) from exc

    return profile


def failure(exc: BaseException, providers: tuple[Any, ...] = ()) -> ProfileFailed:
    """The ``ProfileFailed`` for ``exc``: naming the exception the user's code raised, the part
    of their code that raised it (by ``providers``) and where; else (no user frames, or memory
    ran out) ``exc``'s own words."""
    from skyline_nb.profiler.errors import ProfilerError, ResourceError

    user = None
    if not isinstance(exc, ResourceError):  # memory that ran out in their code is no fault of it
        user = next((e for e in _chain(exc) if user_traceback(e) is not None), None)
    if user is None:  # the profiler's own words for the user, or a fault of ours as it is
        return ProfileFailed(str(exc) if isinstance(exc, ProfilerError) else
                             f"{type(exc).__name__}: {exc}")
    entries = [tb for tb in _entries(user_traceback(user)) if _is_user(tb)]
    role = _role(entries[0].tb_frame.f_code, providers)
    last = entries[-1]  # the user's line that raised, or called what raised
    where = location(last.tb_frame.f_code.co_filename, last.tb_lineno)
    return ProfileFailed(f"{role} raised {type(user).__name__}: {user}\n  at {where}", user)


def location(filename: str, line: int) -> str:
    """'Cell In[12], line 17' (IPython's name for the cell, its prompt; the line as the cell
    shows it), else 'model.py, line 17' (relative to the working folder when under it)."""
    from IPython import get_ipython

    entry = cells.lookup(filename)
    line = entry.cell_line(line) if entry is not None else line
    shell = get_ipython()
    named = shell.compile.format_code_name(filename) if shell is not None else None
    if named:
        return f"{' '.join(named)}, line {line}"
    if entry is not None:
        return entry.where(line)
    path, here = Path(filename), Path.cwd()
    return f"{path.relative_to(here) if path.is_relative_to(here) else path}, line {line}"


def user_traceback(exc: BaseException) -> TracebackType | None:
    """``exc``'s traceback from its first frame in the user's code on, without skyline_nb's
    frames; None when no frame is the user's."""
    entries = list(_entries(exc.__traceback__))
    first = next((i for i, tb in enumerate(entries) if _is_user(tb)), None)
    if first is None:
        return None
    kept = [tb for tb in entries[first:] if not _is_ours(tb)]
    rebuilt = None
    for tb in reversed(kept):
        rebuilt = TracebackType(rebuilt, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    return rebuilt


def _role(code: Any, providers: tuple[Any, ...]) -> str:
    """Which part of the user's code a call stack starts in: a provider, else the iteration."""
    for role, provider in zip(_ROLES, providers, strict=False):
        # By name: an input provider bridged for --batch-size-var keeps only the user's name.
        if getattr(provider, "__name__", None) == code.co_name:
            return f"the {role}"
    return "the iteration"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__)


def _entries(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _is_user(tb: TracebackType) -> bool:
    from skyline_nb.profiler.stacks import is_user_file

    filename = tb.tb_frame.f_code.co_filename
    return cells.lookup(filename) is not None or is_user_file(filename)


def _is_ours(tb: TracebackType) -> bool:
    path = Path(tb.tb_frame.f_code.co_filename).resolve()
    return path.is_relative_to(_PACKAGE) and not path.is_relative_to(_EXAMPLES)


def _structured(etype: type, value: BaseException, tb: TracebackType | None,
                tb_offset: int | None = None) -> list[str]:
    """IPython's own rendering of a traceback (plain ``traceback`` without a shell);
    ``tb_offset`` None skips IPython's own first frame, as IPython does."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return traceback.format_exception(etype, value, tb)
    return shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)


def _full(exc: BaseException) -> list[str]:
    return _structured(type(exc), exc, exc.__traceback__)

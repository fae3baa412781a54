"""``skyline-nb``: Skyline's command line (``time`` / ``memory`` SQLite reports) plus ``profile``.

Skyline users ran ``skyline time entry.py -o t.sqlite``; the same entry files and commands work
here, so existing scripts and report consumers carry over. ENTRY is executed as a module (its
folder first on ``sys.path``, so its sibling imports work) and must define the three providers,
named ``skyline_*`` or, as Skyline's successor DeepView named them, ``deepview_*`` (``entry``'s
rules, shared with the ``%skyline`` magic; the options are in ``cli_args``).

While it profiles, a progress line goes to stderr (rewritten in place on a terminal, a line per
stage elsewhere; ``--quiet`` turns it off).

Exit codes: 0 done; 1 the user's code or the profiler failed; 2 usage errors (bad arguments,
missing ENTRY or providers, an existing output without ``--force``), as argparse does; 130 on
Ctrl-C. Errors are one line on stderr, without our traceback (``--debug`` shows it); when the user's
own code raised (ENTRY's top level, or a provider during profiling), the traceback from the
first frame in their project on follows, because that is what they fix.

The ``time`` and ``memory`` commands never fit the performance models: Skyline's SQLite formats
have no place for predictions, and skipping them keeps the commands as quick as Skyline's. So
``--no-predict`` and ``--memory-budget`` (which only bounds the predictions) belong to
``profile`` alone.
"""

from __future__ import annotations

import argparse
import contextlib
import runpy
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skyline_nb.cli_args import parse_arguments
from skyline_nb.entry import (
    Providers,
    UsageError,
    check_device,
    check_output_place,
    export,
    export_kind,
    find_providers,
    wrote,
)
from skyline_nb.export.units import format_bytes, format_ms, format_throughput
from skyline_nb.textprogress import TextProgress

if TYPE_CHECKING:
    from skyline_nb.report import Report

ENTRY_RUN_NAME = "__skyline_entry__"


class UserCodeError(Exception):
    """ENTRY's own top-level code raised (exit code 1, with the user's traceback)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting (testable in process)."""
    try:
        args = parse_arguments(argv)
    except SystemExit as exc:  # --help, --version and argparse's own usage errors
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return _run(args)
    except UsageError as exc:
        _say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except Exception as exc:
        return _report_failure(exc, args)


def _report_failure(exc: Exception, args: argparse.Namespace) -> int:
    """Exit 1 with what the user needs: our message, then the traceback of THEIR code if any.

    UserCodeError (ENTRY's top level raised) and the profiler's own errors (ProfilerError, e.g.
    a provider that raised, chained as the cause) have messages that stand alone; anything else
    is a bug or an unforeseen failure, so it is named by type and ``--debug`` shows where.
    """
    from skyline_nb.profiler.errors import ProfilerError, ResourceError

    if args.debug:
        traceback.print_exc()
    if isinstance(exc, (UserCodeError, ProfilerError)):
        _say(f"error: {exc}")
        cause = exc.__cause__  # memory that ran out in their code: no fault of it (``failures``)
        if cause is not None and not args.debug and not isinstance(exc, ResourceError):
            sys.stderr.write("".join(_user_traceback(cause, _project_root(args))))
    else:
        hint = "" if args.debug else " (--debug shows the traceback)"
        _say(f"error: profiling {args.entry} failed: {type(exc).__name__}: {exc}{hint}")
    return 1


def _run(args: argparse.Namespace) -> int:
    entry = args.entry.expanduser().resolve()
    if not entry.is_file():
        raise UsageError(f"ENTRY {args.entry} is not a file")
    output = args.output.expanduser()
    _check_output(output, args.force)
    kind = export_kind(output) if args.command == "profile" else args.command
    check_device(args.device)
    root = _project_root(args)
    if not root.is_dir():
        raise UsageError(f"project root {root} is not a folder")
    with _entry_context(entry):
        providers = run_entry(entry)
        report = _profile(providers, args, root)
    for warning in report.warnings:
        _say(f"warning: {warning}")
    if report.models is not None and not report.models.can_manipulate:  # the widget's words
        _say(f"predictions off: {report.models.reason}")
    try:
        export(report, output, kind, overwrite=args.force)
    except FileExistsError as exc:  # created by someone else while we were profiling
        raise UsageError(str(exc)) from None
    print(_summary(report, args.command, kind, output))
    return 0


def _check_output(output: Path, force: bool) -> None:
    """Refuse before profiling, so minutes of measuring are not thrown away at the end."""
    check_output_place(output)
    if not force and (output.exists() or output.is_symlink()):
        raise UsageError(f"output {output} already exists; pass --force to overwrite it")


@contextlib.contextmanager
def _entry_context(entry: Path) -> Iterator[None]:
    """ENTRY's folder first on sys.path and argv = [ENTRY] while it loads and runs; restored."""
    saved_path, saved_argv = list(sys.path), list(sys.argv)
    sys.path.insert(0, str(entry.parent))
    sys.argv = [str(entry)]
    try:
        yield
    finally:
        sys.path[:], sys.argv = saved_path, saved_argv


def run_entry(entry: Path) -> Providers:
    """Run ENTRY as module ``__skyline_entry__`` and return its three providers, in order."""
    try:
        namespace = runpy.run_path(str(entry), run_name=ENTRY_RUN_NAME)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: ENTRY must not end skyline-nb's process
        raise UserCodeError(f"running {entry.name} raised {type(exc).__name__}: {exc}") from exc
    return find_providers(namespace, where=entry.name)


def _profile(providers: Providers, args: argparse.Namespace, root: Path) -> Report:
    """Profile, with a progress line on stderr unless ``--quiet`` (``textprogress``)."""
    from skyline_nb import profile  # looked up at call time: tests stand in for it

    line = contextlib.nullcontext() if args.quiet else TextProgress(sys.stderr)
    with line as progress:
        return profile(*providers, batch_size=args.batch_size, device=args.device,
                       predict=args.predict, project_root=root,
                       memory_budget=args.memory_budget, progress=progress)


def _summary(report: Report, command: str, kind: str, output: Path) -> str:
    ops = sum(1 for n in report.tree.walk() if n.kind == "op")
    what = {"time": f"{ops} operations", "memory": f"{len(report.weights)} weights",
            "trace": "Chrome trace"}.get(kind if command == "profile" else command,
                                          "full report")
    return (
        f"skyline-nb: {wrote(output)}, {what}: batch {report.batch_size} on "
        f"{report.device.kind}, {format_ms(report.iteration_ms)}/iteration, "
        f"{format_throughput(report.throughput)}, peak {format_bytes(report.peak_bytes)}"
    )


def _project_root(args: argparse.Namespace) -> Path:
    entry = args.entry.expanduser().resolve()
    return (args.project_root.expanduser() if args.project_root else entry.parent).resolve()


def _user_traceback(exc: BaseException, root: Path) -> list[str]:
    """The traceback from the first frame in the user's project on; runpy's, torch's and our
    frames before it are noise to someone fixing their own code."""
    from skyline_nb.profiler.stacks import is_user_file

    tb = exc.__traceback__
    while tb is not None and not is_user_file(tb.tb_frame.f_code.co_filename, root):
        tb = tb.tb_next
    if tb is None:  # e.g. a SyntaxError: no frame of theirs ran; the message has the location
        return traceback.format_exception_only(exc)
    return traceback.format_exception(type(exc), exc, tb)


def _say(message: str) -> None:
    print(f"skyline-nb: {message}", file=sys.stderr)

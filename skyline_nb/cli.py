"""``skyline-nb``: Skyline's command line (``time`` / ``memory`` SQLite reports) plus ``profile``.

Skyline users ran ``skyline time entry.py -o t.sqlite``; the same entry files and commands work
here, so existing scripts and report consumers carry over. ENTRY is executed as a module (its
folder first on ``sys.path``, so its sibling imports work) and must define the three providers,
named ``skyline_*`` or, as Skyline's successor DeepView named them, ``deepview_*``.

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
import re
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyline_nb.export.units import format_bytes, format_ms

if TYPE_CHECKING:
    from skyline_nb.report import Report

PROVIDER_ROLES = ("model_provider", "input_provider", "iteration_provider")
PROVIDER_PREFIXES = ("skyline_", "deepview_")
ENTRY_RUN_NAME = "__skyline_entry__"
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "m": 1 << 20,
    "g": 1 << 30,
    "t": 1 << 40,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}

EPILOG = """\
ENTRY must define (as Skyline's entry point files do):
  skyline_model_provider()              -> the model, on the device
  skyline_input_provider(batch_size=N)  -> the inputs of one iteration
  skyline_iteration_provider(model)     -> a function running one training iteration
(deepview_* names are accepted too). Example:
  skyline-nb time entry.py -o entry.time.sqlite
  skyline-nb memory entry.py -o entry.memory.sqlite --batch-size 64
  skyline-nb profile entry.py -o report.json --memory-budget 8GiB
"""


class UsageError(Exception):
    """A problem with how skyline-nb was called (exit code 2, message only)."""


class UserCodeError(Exception):
    """ENTRY's own top-level code raised (exit code 1, with the user's traceback)."""


def parse_size(text: str) -> int:
    """Bytes from '8GiB', '512MB', '1.5G' or '1000000'.

    KB/MB/GB/TB are decimal, KiB/MiB/GiB/TiB binary; a bare K/M/G/T is binary, as in
    ``docker -m 512m`` and in how GPU memory is usually quoted. Case does not matter.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}; use a number of bytes with an optional unit, "
            "like 8GiB, 512MB or 1.5G"
        )
    size = round(float(match.group(1)) * _SIZE_UNITS[unit])
    if size < 1:
        raise argparse.ArgumentTypeError(f"size {text!r} must be at least one byte")
    return size


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid batch size {text!r}; expected an integer"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"batch size must be at least 1, not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skyline-nb",
        description="Profile one PyTorch training iteration (Skyline-compatible reports).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    helps = {
        "time": "run-time report: one row per operation, in Skyline's SQLite format",
        "memory": "memory report: weights, activations and peak, in Skyline's SQLite format",
        "profile": "the full report as versioned JSON (what the notebook widget shows)",
    }
    for name, text in helps.items():
        command = commands.add_parser(
            name,
            help=text,
            description=text,
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common(command, default_predict=name == "profile")
    return parser


def _add_common(command: argparse.ArgumentParser, *, default_predict: bool) -> None:
    command.add_argument(
        "entry",
        metavar="ENTRY",
        type=Path,
        help="Python file defining the skyline_* (or deepview_*) providers",
    )
    command.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        help="file to write (refused if it exists, unless --force)",
    )
    command.add_argument(
        "--batch-size",
        type=_positive_int,
        metavar="N",
        help="batch size to profile (default: the input provider's default)",
    )
    command.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        help="where to run (default: cuda when available, else cpu)",
    )
    command.add_argument(
        "--project-root",
        type=Path,
        metavar="DIR",
        help="only frames in files under DIR are kept (default: ENTRY's folder)",
    )
    command.add_argument(
        "-f", "--force", action="store_true", help="overwrite the output if it exists"
    )
    command.add_argument("--debug", action="store_true", help="show full tracebacks for failures")
    if default_predict:
        command.add_argument(
            "--no-predict",
            dest="predict",
            action="store_false",
            help="skip sampling more batch sizes and fitting the models",
        )
        command.add_argument(
            "--memory-budget",
            type=parse_size,
            metavar="SIZE",
            help="largest peak memory the predictions may plan for, e.g. 8GiB "
            "or 512MB (default: the device's capacity)",
        )
    command.set_defaults(predict=default_predict, memory_budget=None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting (testable in process)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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
    from skyline_nb.profiler.errors import ProfilerError

    if args.debug:
        traceback.print_exc()
    if isinstance(exc, (UserCodeError, ProfilerError)):
        _say(f"error: {exc}")
        cause = exc.__cause__
        if cause is not None and not args.debug:
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
    root = _project_root(args)
    if not root.is_dir():
        raise UsageError(f"project root {root} is not a folder")
    with _entry_context(entry):
        providers = load_providers(entry)
        report = _profile(providers, args, root)
    for warning in report.warnings:
        _say(f"warning: {warning}")
    _write(report, args.command, output, args.force)
    print(_summary(report, args.command, output))
    return 0


def _check_output(output: Path, force: bool) -> None:
    """Refuse before profiling, so minutes of measuring are not thrown away at the end."""
    if output.is_dir():
        raise UsageError(f"output {output} is a folder")
    if not force and (output.exists() or output.is_symlink()):
        raise UsageError(f"output {output} already exists; pass --force to overwrite it")
    if not output.parent.resolve().is_dir():
        raise UsageError(f"folder {output.parent} does not exist")


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


def load_providers(entry: Path) -> tuple[Callable[..., Any], ...]:
    """Run ENTRY as module ``__skyline_entry__`` and return its three providers, in order."""
    try:
        namespace = runpy.run_path(str(entry), run_name=ENTRY_RUN_NAME)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: ENTRY must not end skyline-nb's process
        raise UserCodeError(f"running {entry.name} raised {type(exc).__name__}: {exc}") from exc
    found, missing = [], []
    for role in PROVIDER_ROLES:
        names = [prefix + role for prefix in PROVIDER_PREFIXES]
        provider = next((namespace[n] for n in names if n in namespace), None)
        if provider is None:
            missing.append(" or ".join(names))
        elif not callable(provider):
            raise UsageError(
                f"{entry.name}: {names[0]} is a {type(provider).__name__}, not a function"
            )
        found.append(provider)
    if missing:
        raise UsageError(f"{entry.name} does not define {', '.join(missing)}")
    return tuple(found)


def _profile(
    providers: tuple[Callable[..., Any], ...], args: argparse.Namespace, root: Path
) -> Report:
    from skyline_nb import profile

    return profile(
        *providers,
        batch_size=args.batch_size,
        device=args.device,
        predict=args.predict,
        project_root=root,
        memory_budget=args.memory_budget,
    )


def _write(report: Report, command: str, output: Path, force: bool) -> None:
    from skyline_nb.export import atomic_output
    from skyline_nb.export.sqlite import save_report

    try:
        if command == "profile":
            text = report.to_json()
            with atomic_output(output, overwrite=force) as temp:
                temp.write_text(text, encoding="utf-8")
        else:
            save_report(report, output, command, overwrite=force)
    except FileExistsError as exc:  # created by someone else while we were profiling
        raise UsageError(str(exc)) from None


def _summary(report: Report, command: str, output: Path) -> str:
    ops = sum(1 for n in report.tree.walk() if n.kind == "op")
    what = {
        "time": f"{ops} operations",
        "memory": f"{len(report.weights)} weights",
        "profile": "full report",
    }[command]
    return (
        f"skyline-nb: wrote {output} ({what}): batch {report.batch_size} on "
        f"{report.device.kind}, {format_ms(report.iteration_ms)}/iteration, "
        f"{report.throughput:.1f} samples/s, peak {format_bytes(report.peak_bytes)}"
    )


def _project_root(args: argparse.Namespace) -> Path:
    entry = args.entry.expanduser().resolve()
    return (args.project_root.expanduser() if args.project_root else entry.parent).resolve()


def _user_traceback(exc: BaseException, root: Path) -> list[str]:
    """The traceback from the first frame in the user's project on; runpy's, torch's and our
    frames before it are noise to someone fixing their own code."""
    package = Path(__file__).resolve().parent
    tb = exc.__traceback__
    while tb is not None and not _is_user_file(tb.tb_frame.f_code.co_filename, root, package):
        tb = tb.tb_next
    if tb is None:  # e.g. a SyntaxError: no frame of theirs ran; the message has the location
        return traceback.format_exception_only(exc)
    return traceback.format_exception(type(exc), exc, tb)


def _is_user_file(filename: str, root: Path, package: Path) -> bool:
    path = Path(filename).resolve()
    in_package = path.is_relative_to(package) and not path.is_relative_to(package / "examples")
    return path.is_relative_to(root) and not in_package


def _say(message: str) -> None:
    print(f"skyline-nb: {message}", file=sys.stderr)


def _version() -> str:
    from skyline_nb import __version__

    return __version__

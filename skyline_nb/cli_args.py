"""What the ``skyline-nb`` command line accepts: its commands, options and help.

``time`` and ``memory`` (Skyline's commands) take no ``--no-predict`` or ``--memory-budget``:
they never fit the performance models (see ``cli``); ``profile`` does, unless told not to.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from skyline_nb import __version__
from skyline_nb.entry import UsageError, batch_size_arg, parse_size

EPILOG = """\
ENTRY must define (as Skyline's entry point files do):
  skyline_model_provider()              -> the model, on the device
  skyline_input_provider(batch_size=N)  -> the inputs of one iteration
  skyline_iteration_provider(model)     -> a function running one training iteration
(deepview_* names are accepted too). Example:
  skyline-nb time entry.py -o entry.time.sqlite
  skyline-nb memory entry.py -o entry.memory.sqlite --batch-size 64
  skyline-nb profile entry.py -o report.json --memory-budget 8GiB
  skyline-nb profile entry.py -o run.trace.json
"""
COMMANDS = {
    "time": "run-time report: one row per operation, in Skyline's SQLite format",
    "memory": "memory report: weights, activations and peak, in Skyline's SQLite format",
    "profile": "the full report, its format by the output's name: .json the versioned report "
               "(what the notebook widget shows), .trace.json a Chrome/Perfetto trace, .html a "
               "page",
}


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line parsed; argparse's usage errors exit (SystemExit). An unknown option is
    named first: argparse alone names a missing ``-o`` and stops there."""
    lenient = build_parser(output_required=False)
    _, unknown = lenient.parse_known_args(argv)
    if unknown:
        lenient.error(f"unrecognized arguments: {' '.join(unknown)}")
    return build_parser().parse_args(argv)


def build_parser(output_required: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``output_required=False`` for ``parse_arguments``' first
    pass."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="skyline-nb", epilog=EPILOG, formatter_class=raw,
        description="Profile one PyTorch training iteration (Skyline-compatible reports).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in COMMANDS.items():
        command = commands.add_parser(name, help=text, description=text, epilog=EPILOG,
                                      formatter_class=raw)
        _add_common(command, predicts=name == "profile", output_required=output_required)
    return parser


def _add_common(command: argparse.ArgumentParser, *, predicts: bool,
                output_required: bool) -> None:
    add = command.add_argument
    add("entry", metavar="ENTRY", type=Path,
        help="Python file defining the skyline_* (or deepview_*) providers")
    add("-o", "--output", required=output_required, type=Path,
        help="file to write (refused if it exists, unless --force)")
    add("--batch-size", type=batch_size_arg, metavar="N",
        help="batch size to profile (default: the input provider's default)")
    add("--device", choices=("cuda", "cpu"),
        help="where to run (default: cuda when available, else cpu)")
    add("--project-root", type=Path, metavar="DIR",
        help="only frames in files under DIR are kept (default: ENTRY's folder)")
    add("-f", "--force", action="store_true", help="overwrite the output if it exists")
    add("--debug", action="store_true", help="show full tracebacks for failures")
    add("-q", "--quiet", action="store_true", help="no progress line on stderr while profiling")
    if predicts:
        add("--no-predict", dest="predict", action="store_false",
            help="skip sampling more batch sizes and fitting the models")
        add("--memory-budget", type=_size, metavar="SIZE",
            help="largest peak memory the predictions may plan for, e.g. 8GiB or 512MB "
                 "(default: the device's capacity)")
    command.set_defaults(predict=predicts, memory_budget=None)

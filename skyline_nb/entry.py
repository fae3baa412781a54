"""What the ``%skyline`` magic and the ``skyline-nb`` command line share.

Both take the three providers from a namespace (the notebook's, or ENTRY's after it ran), sizes
such as ``8GiB``, and an output file whose name says what to write. Each rule lives here once;
each front end turns :class:`UsageError` into its own refusal (IPython's ``UsageError``, exit
code 2). Which code counts as the user's is the profiler's rule, ``profiler.stacks.is_user_file``.
Nothing here imports IPython or torch.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyline_nb.report import Report

# Skyline's names, then those of its successor DeepView: skyline_model_provider, ...
PREFIXES = ("skyline_", "deepview_")
ROLES = ("model", "input", "iteration")
# Checked in order: the first suffix the file name ends with decides the format, so a name
# ending in .trace.json is a Chrome trace and any other .json name the report.
EXPORT_KINDS = {
    ".memory.sqlite": "memory", ".sqlite": "time", ".trace.json": "trace", ".json": "json",
    ".html": "html",
}
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}  # fmt: skip

Providers = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]


class UsageError(Exception):
    """The magic or the command line was called wrongly: a provider, a size or an output name."""


def find_providers(
    namespace: Mapping[str, Any], names: Mapping[str, str | None] | None = None, *, where: str,
    hint: str = "",
) -> Providers:
    """The model, input and iteration providers in ``namespace``, in that order.

    A role given a name in ``names`` (keys ``model``, ``input``, ``iteration``) is looked up under
    that name alone; any other as ``skyline_<role>_provider``, then ``deepview_<role>_provider``.
    Raises UsageError, prefixed with ``where``, naming every missing provider (then ``hint``, how
    to name other functions), or the first found that is not callable.
    """
    names = names or {}
    found, missing = [], []
    for role in ROLES:
        given = names.get(role)
        candidates = [given] if given else [f"{prefix}{role}_provider" for prefix in PREFIXES]
        name = next((n for n in candidates if n in namespace), None)
        if name is None:
            missing.append(" or ".join(candidates) + _near(candidates, namespace))
        elif not callable(namespace[name]):
            kind = type(namespace[name]).__name__
            article = "an" if kind[:1] in "aeiou" else "a"
            raise UsageError(f"{where}: {name} is {article} {kind}, not a function")
        else:
            found.append(namespace[name])
    if missing:
        raise UsageError(f"{where} does not define {', '.join(missing)}{hint}")
    return found[0], found[1], found[2]


def _near(candidates: list[str], namespace: Mapping[str, Any]) -> str:
    """' (did you mean skyline_input_provder?)' where a function in ``namespace`` is spelled
    nearly like one of ``candidates`` (a typo in the name or in ``-i NAME``), else ''."""
    functions = [n for n, v in namespace.items() if callable(v) and not n.startswith("_")]
    close = {m for c in candidates for m in difflib.get_close_matches(c, functions, 1, 0.8)}
    return f" (did you mean {' or '.join(sorted(close))}?)" if close else ""


def check_device(device: str | None) -> str | None:
    """``--device``, refused before anything runs where it cannot be had: cuda without a GPU
    read as a failed profile (a ValueError from inside, exit 1) and, in a notebook, an empty
    widget first."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda: torch sees no CUDA GPU here "
                             "(torch.cuda.is_available() is False); use --device cpu or leave "
                             "--device out")
    return device


def int_variable(namespace: dict[str, Any], name: str) -> int:
    """The batch size ``--batch-size-var NAME`` names: a positive int in ``namespace``."""
    if name not in namespace:
        raise UsageError(f"--batch-size-var {name}: no variable `{name}` is defined")
    value = namespace[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"--batch-size-var {name}: `{name}` is {value!r}, not a positive int")
    return value


def parse_size(text: str) -> int:
    """Bytes from '8GiB', '512MB', '1.5G' or '1000000'; UsageError for anything else.

    KB/MB/GB/TB are decimal, KiB/MiB/GiB/TiB binary; a bare K/M/G/T is binary, as in
    ``docker -m 512m`` and in how GPU memory is usually quoted. Case does not matter.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS:
        raise UsageError(
            f"invalid size {text!r}; use a number of bytes with an optional unit, "
            "like 8GiB, 512MB or 1.5G"
        )
    size = round(float(match.group(1)) * _SIZE_UNITS[unit])
    if size < 1:
        raise UsageError(f"size {text!r} must be at least one byte")
    return size


def batch_size_arg(text: str) -> int:
    """``--batch-size N`` of the command line and of ``%skyline``: a batch size of at least 1,
    refused with argparse's usage error before anything is profiled."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid batch size {text!r}; expected an integer") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"batch size must be at least 1, not {value}")
    return value


def check_output_place(path: Path) -> None:
    """Refuse an output that cannot be written where it is named (a folder, or in a folder that
    does not exist) before profiling, so minutes of measuring are not thrown away at the end."""
    if path.is_dir():
        raise UsageError(f"output {path} is a folder")
    if not path.parent.resolve().is_dir():
        raise UsageError(f"folder {path.parent} does not exist")


def export_kind(path: Path) -> str:
    """'time', 'memory', 'trace', 'json' or 'html' by the file name (see ``EXPORT_KINDS``)."""
    name = path.name.lower()
    kind = next((k for suffix, k in EXPORT_KINDS.items() if name.endswith(suffix)), None)
    if kind is None:
        raise UsageError(
            f"{path}: use a .sqlite, .memory.sqlite, .json or .html file name "
            "(or .trace.json for a Chrome trace)"
        )
    return kind


def wrote(path: Path) -> str:
    """What every export prints once written: 'wrote p.html (96.9 KiB)'."""
    from skyline_nb.export.units import format_bytes

    return f"wrote {path} ({format_bytes(path.stat().st_size)})"


def export(report: Report, path: Path, kind: str | None = None, *, overwrite: bool) -> Path:
    """Write ``report`` to ``path`` as ``kind`` (default: ``export_kind(path)``).

    Kinds: Skyline's ``time`` or ``memory`` SQLite report, the versioned ``json``, a Chrome
    ``trace`` of the instrumented iteration, the offline ``html`` page. Raises FileExistsError
    when ``path`` exists and ``overwrite`` is false.
    """
    kind = kind or export_kind(path)
    if kind == "json":
        report.to_json(path, overwrite=overwrite)
        return path
    if kind == "trace":
        return report.to_chrome_trace(path, overwrite=overwrite)
    if kind == "html":
        from skyline_nb.export import refuse_existing
        from skyline_nb.export.html import save_html

        refuse_existing(path, overwrite)
        return save_html(report.to_dict(), path)
    from skyline_nb.export.sqlite import save_report

    return save_report(report, path, kind, overwrite=overwrite)

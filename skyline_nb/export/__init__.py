"""Exports: views of a Report (Skyline's SQLite reports, JSON, an HTML page, a Chrome/Perfetto
trace, a pandas DataFrame).

Exporters take the report and import nothing that imports them back (``report.py`` imports them
only inside its convenience methods). The SQLite reports (``sqlite.py``), the JSON
(``Report.to_json``) and the trace (``trace.py``) are written through :func:`atomic_output`, so
a crash or Ctrl-C halfway through never leaves a truncated file where a reader (or Skyline's
own tooling) would take it for a whole one, and an existing file is only replaced when the
caller asked for that. The HTML page (``html.py``) is written in place and replaces an existing
file. ``dataframe.py`` builds a DataFrame in memory; ``snapshot.py`` and ``units.py`` make text
for the notebook's static output, not files.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_output", "refuse_existing"]


def refuse_existing(path: Path, overwrite: bool) -> None:
    """Raise FileExistsError when ``path`` exists and ``overwrite`` is false.

    Exporters call this before doing any work too, so a long profile is not wasted on an output
    that would be refused at the end.
    """
    if not overwrite and (path.exists() or path.is_symlink()):
        raise FileExistsError(
            f"{path} already exists; refusing to overwrite it "
            "(pass overwrite=True, or --force on the command line)"
        )


@contextlib.contextmanager
def atomic_output(path: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary path next to ``path``; on success move it into place in one step.

    The temporary file lives in the destination folder so the final rename never crosses file
    systems (``os.replace`` is atomic only within one). Without ``overwrite`` the move uses
    ``os.link``, which fails if the destination appeared meanwhile, instead of a check-then-rename
    race. The temporary file is removed on any error.
    """
    path = Path(path)
    refuse_existing(path, overwrite)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"folder {path.parent} does not exist; cannot write {path.name}")
    # Not created here (mkstemp would make it 0600): the writer creates it with the usual
    # umask-derived mode, which the published report keeps.
    temp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        yield temp
        if overwrite:
            os.replace(temp, path)
        else:
            _link_no_clobber(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _link_no_clobber(temp: Path, path: Path) -> None:
    """Publish ``temp`` as ``path`` only if ``path`` does not exist (atomically where possible)."""
    try:
        os.link(temp, path)
    except FileExistsError:
        refuse_existing(path, overwrite=False)  # raises with the explanatory message
        raise
    except OSError:
        # File systems without hard links (some network or FAT mounts): check, then rename.
        refuse_existing(path, overwrite=False)
        os.replace(temp, path)

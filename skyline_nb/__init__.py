"""skyline_nb: Skyline's interactive PyTorch training profiler, inside Jupyter.

``%load_ext skyline_nb`` registers ``%skyline`` / ``%%skyline``; ``skyline_nb.profile(...)`` is
the Python API. Heavy imports (torch, the widget) happen lazily, on first use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("skyline-nb")  # pyproject.toml is the one place the version is set
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from skyline_nb.report import Report


def profile(*args: Any, **kwargs: Any) -> Report:
    """Profile one training iteration; see ``skyline_nb.profiler.session.profile``.

    Code defined in notebook cells links to its cell (``cells.lookup`` unless ``cells=`` says
    otherwise), as in ``%skyline``.
    """
    from skyline_nb import cells
    from skyline_nb.profiler.session import profile as _profile

    kwargs.setdefault("cells", cells.lookup)
    return _profile(*args, **kwargs)


def last_report() -> Report | None:
    """The Report of the latest ``%skyline`` run in this kernel (None before any)."""
    from skyline_nb.magic import last_report as _last_report

    return _last_report()


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext skyline_nb``."""
    from skyline_nb.magic import load

    load(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "skyline-nb"}]

"""The measuring side of skyline_nb: knows nothing about widgets or notebooks.

``profile`` (session.py) runs the leveled measurement and returns a ``Report``;
``measure_iteration`` (prepare.py) is one uninstrumented, isolated level-1 measurement, the
building block of batch-size sampling and of the prediction-accuracy benchmark.
Imports are lazy so ``import skyline_nb.profiler`` stays cheap until something is measured.
"""

from __future__ import annotations

from typing import Any

__all__ = ["measure_iteration", "profile"]


def profile(*args: Any, **kwargs: Any) -> Any:
    """See ``skyline_nb.profiler.session.profile``."""
    from skyline_nb.profiler.session import profile as _profile

    return _profile(*args, **kwargs)


def measure_iteration(*args: Any, **kwargs: Any) -> Any:
    """See ``skyline_nb.profiler.prepare.measure_iteration``."""
    from skyline_nb.profiler.prepare import measure_iteration as _measure

    return _measure(*args, **kwargs)

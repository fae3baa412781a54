"""Comparing a fixture written on one machine with what this one computes: the fitted curves'
last digits follow the machine's BLAS (a least-squares solve takes another SIMD path on
another CPU), so floats are compared to 1e-9 relative or 1e-12 absolute (a residual of 0
read 1.8e-15 on another machine), and everything else exactly."""

from __future__ import annotations

from typing import Any

import pytest


def within_ulps(value: Any) -> Any:
    """``value`` (parsed JSON) with every float replaced by an approximate one."""
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-9, abs=1e-12)
    if isinstance(value, dict):
        return {k: within_ulps(v) for k, v in value.items()}
    if isinstance(value, list):
        return [within_ulps(v) for v in value]
    return value

"""Numbers as text for Python-side views (snapshot, command-line summary), as js/src/format.js.

Both sides print the same text for the same value: three significant digits, all-zero decimals
dropped ("2 ms", "12.3 MiB", "1.50 KiB"), a real minus sign (U+2212), an em dash for a missing
or non-finite value. ``tests/fixtures/format_cases.json`` holds the cases both test suites
check. JavaScript's rounding is mirrored exactly: ``toFixed`` and ``Math.round`` round the exact
binary value half up, where Python's ``round`` and format specs round half to even.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal

MINUS = "\u2212"
EMPTY = "\u2014"
_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_ms(value: float | None) -> str:
    """Milliseconds: '0 ms', '850 µs', '1.23 ms', '12.3 ms', '123 ms', '1.23 s'."""
    if not _finite(value):
        return EMPTY
    if value == 0:
        return "0 ms"

    def body(ms: float) -> str:
        # A value that rounds up to the next unit is shown in it ('1 ms', never '1000 µs').
        if ms >= 999.5:
            return f"{_sig3(ms / 1000)} s"
        if ms >= 0.9995:
            return f"{_sig3(ms)} ms"
        us = ms * 1000
        return f"{_sig3(us) if us >= 1 else _trim_zero(_to_fixed(us, 3))} \u00b5s"

    return _signed(value, body)


def format_bytes(value: float | None) -> str:
    """Bytes in IEC units: '512 B', '1.50 KiB', '12.3 MiB', '7.81 GiB'."""
    if not _finite(value):
        return EMPTY

    def body(size: float) -> str:
        unit = 0
        while size >= 1024 and unit < len(_IEC) - 1:
            size /= 1024
            unit += 1
        # 1023.6 KiB would print as "1024 KiB": promote, so the number stays below 1024.
        if 0 < unit < len(_IEC) - 1 and _js_round(size) >= 1024:
            size /= 1024
            unit += 1
        return f"{_js_round(size)} B" if unit == 0 else f"{_sig3(size)} {_IEC[unit]}"

    return _signed(value, body)


def format_throughput(value: float | None) -> str:
    """Samples per second: '17,391 samples/s', '98.8 samples/s', '∞ samples/s'."""
    if value == math.inf:
        return "\u221e samples/s"
    if not _finite(value):
        return EMPTY
    return _signed(value, lambda v: f"{f'{_js_round(v):,}' if v >= 1000 else _sig3(v)} samples/s")


def _finite(value: float | None) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _signed(value: float, body: Callable[[float], str]) -> str:
    return MINUS + body(-float(value)) if value < 0 else body(float(value))


def _sig3(x: float) -> str:
    """Three significant digits without an exponent: 1.23, 12.3, 123, 1234."""
    if x >= 100:
        return str(_js_round(x))
    return _trim_zero(_to_fixed(x, 1 if x >= 10 else 2))


def _trim_zero(text: str) -> str:
    """'2.00' -> '2': a round value must not look more precise than the data it came from."""
    whole, dot, decimals = text.partition(".")
    return whole if dot and not decimals.strip("0") else text


def _to_fixed(x: float, digits: int) -> str:
    """JavaScript's ``x.toFixed(digits)`` for x >= 0."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _js_round(x: float) -> int:
    """JavaScript's ``Math.round(x)`` for x >= 0."""
    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))

"""Number formatting for Python-side views (snapshot, text summary), mirroring js/src/format.js.

Raw values stay integers/floats in the report; only views format them, in one place per side.
"""

from __future__ import annotations

_IEC = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(value: float) -> str:
    """1536 -> '1.50 KiB'; negative sizes (untracked) keep their sign."""
    sign = "-" if value < 0 else ""
    size = abs(float(value))
    unit = 0
    while size >= 1024 and unit < len(_IEC) - 1:
        size /= 1024
        unit += 1
    if unit == 0:
        return f"{sign}{int(size)} B"
    return f"{sign}{size:.2f} {_IEC[unit]}"


def format_ms(value: float) -> str:
    """Milliseconds with sensible precision: 0.0123 -> '12.3 µs', 1234.5 -> '1.23 s'."""
    if abs(value) >= 1000:
        return f"{value / 1000:.2f} s"
    if abs(value) < 1:
        return f"{value * 1000:.1f} µs"
    return f"{value:.2f} ms"

"""Figures as people read them: durations in the unit that suits them (50.1 s, not 50,071 ms),
counts with thousands separators, rates as percentages. The JSON keeps the raw numbers."""

from __future__ import annotations

_STEPS = ((60_000.0, 1000.0, "s"), (3_600_000.0, 60_000.0, "min"), (86_400_000.0, 3_600_000.0, "h"))


def duration(ms: float | None) -> str:
    """``ms`` milliseconds in the largest unit that keeps the figure at 1 or more: 0.35 ms,
    350 ms, 50.1 s, 12.5 min, 3.2 h, 1.5 d; "-" for None (no value)."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms:.2f} ms" if ms < 1 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    for below, unit, name in _STEPS:
        if ms < below:
            return f"{ms / unit:.1f} {name}"
    return f"{ms / 86_400_000.0:.1f} d"


def count(n: int) -> str:
    return f"{n:,}"


def percent(rate: float) -> str:
    return f"{100 * rate:.2f} %"

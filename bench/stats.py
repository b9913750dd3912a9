"""The harness's arithmetic: percentiles of latencies, and ratios between two arms.

Percentiles interpolate linearly between the closest ranks (numpy's default
method, "type 7"): the p-th percentile of n sorted samples lies at position
(n - 1) * p / 100, counted from 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(samples: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0 to 100) of ``samples``. ValueError for no samples, a NaN
    among them, or ``p`` outside 0..100."""
    if not 0 <= p <= 100:
        raise ValueError(f"a percentile is 0 to 100, not {p}")
    if len(samples) == 0:
        raise ValueError("no samples: a percentile of nothing is undefined")
    ordered = sorted(float(s) for s in samples)
    if any(math.isnan(s) for s in ordered):
        raise ValueError("a sample is NaN")
    return _ranked(ordered, p)


def _ranked(ordered: Sequence[float], p: float) -> float:
    """The ``p``-th percentile of samples already sorted, none of them NaN."""
    position = (len(ordered) - 1) * p / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


@dataclass(frozen=True)
class Latency:
    """How long calls took, in milliseconds."""

    count: int
    p50: float
    p95: float
    p99: float
    max: float

    def as_dict(self) -> dict[str, float | int]:
        return {"count": self.count, "p50": self.p50, "p95": self.p95, "p99": self.p99, "max": self.max}


def latency(seconds: Sequence[float]) -> Latency | None:
    """The percentiles of call durations given in seconds, in milliseconds; None for no calls."""
    if len(seconds) == 0:
        return None
    ms = sorted(s * 1000.0 for s in seconds)
    if any(math.isnan(s) for s in ms):
        raise ValueError("a sample is NaN")
    return Latency(len(ms), _ranked(ms, 50), _ranked(ms, 95), _ranked(ms, 99), ms[-1])


def rate(items: int, seconds: float) -> float:
    """Items per second; ValueError when no time passed."""
    if seconds <= 0:
        raise ValueError(f"a rate needs a positive duration, not {seconds} s")
    return items / seconds


@dataclass(frozen=True)
class Ratio:
    """numerator / denominator, each named by the arm it came from. ``value`` is None when
    it cannot be computed, and ``note`` says why."""

    name: str  # what the ratio compares, e.g. "items/s with 8 workers over 1"
    numerator: str
    denominator: str
    value: float | None
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "numerator": self.numerator, "denominator": self.denominator,
                "value": self.value, "note": self.note}

    def shown(self) -> str:
        """The value as the table shows it: 2 decimals and an x (and the note, when the value
        comes with one), or why there is none."""
        if self.value is None:
            return f"n/a ({self.note})"
        return f"{self.value:.2f}x ({self.note})" if self.note else f"{self.value:.2f}x"


def ratio(name: str, numerator: tuple[str, float | None], denominator: tuple[str, float | None]) -> Ratio:
    """The ratio of two measured values, each given as (label, value). A missing value or
    a zero denominator gives a Ratio without a value that says which, never an exception."""
    (top_label, top), (bottom_label, bottom) = numerator, denominator
    if top is None or bottom is None:
        missing = top_label if top is None else bottom_label
        return Ratio(name, top_label, bottom_label, None, f"{missing} was not measured")
    if bottom == 0:
        return Ratio(name, top_label, bottom_label, None, f"{bottom_label} is 0")
    return Ratio(name, top_label, bottom_label, top / bottom)

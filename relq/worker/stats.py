"""A worker's counts and handler times, shared by its slots, and the summary it
prints on exit."""

from __future__ import annotations

import math
import threading
from collections import Counter

COUNTS = ("claimed", "completed", "retried", "failed", "snoozed", "cancelled", "released", "lost")


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.times: list[float] = []  # seconds per item that ended in Completed, Error or Failed

    def add(self, what: str, n: int = 1) -> None:
        if what not in COUNTS:
            raise ValueError(f"not a count: {what}")
        with self._lock:
            self.counts[what] += n

    def timed(self, seconds: float) -> None:
        with self._lock:
            self.times.append(seconds)

    def summary(self) -> dict[str, float | int | None]:
        """Every count, and the mean and 95th percentile handler time in milliseconds
        (None before the first item)."""
        with self._lock:
            times = sorted(self.times)
            counts = {what: self.counts[what] for what in COUNTS}
        mean = 1000 * sum(times) / len(times) if times else None
        # nearest rank: the smallest time that at least 95 % of the items took at most
        p95 = 1000 * times[math.ceil(0.95 * len(times)) - 1] if times else None
        return {**counts, "mean_ms": mean, "p95_ms": p95}

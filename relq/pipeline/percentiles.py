"""Exact percentiles of many groups at once, in two passes over the rows and without sorting them.

A value's *bucket* is ``floor(ln(v) * scale)`` (every v <= 0 shares one bucket below all others).
Buckets grow with the value (Java's log is semi-monotonic, the multiplication by a power of two
exact), so the k-th smallest value of a group lies in the bucket where the group's running count
passes k, at a known offset inside it:

1. **histograms** (Spark, one aggregation, the caller's): rows per (series, key, bucket), a few
   thousand per key (``scale`` 256 makes each bucket 0.4 % wide);
2. **locate** (driver): for each group, a union of keys (a queue is the union of its types' steps),
   and each rank a percentile reads, the bucket and the offset in it;
3. **pick**: Spark sends the driver the values of those (key, bucket) cells only (about 1.5 % of
   the rows, 14,476 of a million in relq.pipeline.history's week; 12 bytes each on the driver,
   in two NumPy arrays: some 200 MB for a billion rows), and the driver sorts each group's
   values in each bucket it reads and takes the values at the wanted offsets.

The result is exact, the same value a sort of the whole group would give: NumPy's method "linear",
the value at rank (n - 1) * p counting from 0, between its two closest ranks. Step 3 checks that it
found as many values in each cell as step 1 counted: both passes read the files Spark listed once,
and a file rewritten in place between them raises Changed instead of giving a wrong figure.

Rows are *facts*: columns ``s`` (the series, say "wait_ms"), ``Queue``, ``Type``, ``Step``,
``hour`` (keys, any of them NULL), ``v`` (the value, not NULL) and ``b`` (its bucket). A group
is (series, gid, Queue, Type, Step, hour), gid telling roll-up levels apart (figures.LEVELS).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import reduce
from typing import Any

KEYS = ("s", "Queue", "Type", "Step", "hour")
GROUP = ("s", "gid", "Queue", "Type", "Step", "hour")
NOT_POSITIVE = -(1 << 40)  # the bucket of every value <= 0: below ln(smallest double) * 2**16

Key = tuple  # (s, Queue, Type, Step, hour)
Group = tuple  # (s, gid, Queue, Type, Step, hour)


class Changed(Exception):
    """Step 3 (pick) found another number of values in a cell than the histograms of step 1
    counted: the rows changed between the two passes."""


def bucket(value: Any, scale: int) -> Any:
    """The bucket of the double column ``value`` (a power-of-two ``scale``: the product is
    exact); NULL for NULL."""
    from pyspark.sql import functions as F

    return (
        F.when(value > 0, F.floor(F.log(value) * F.lit(float(scale))))
        .when(value.isNotNull(), F.lit(NOT_POSITIVE))
        .cast("long")
    )


def ranks(n: int, p: float) -> tuple[int, int]:
    """The two ranks (from 0) the percentile p of n values reads."""
    position = (n - 1) * p
    return math.floor(position), math.ceil(position)


def interpolate(n: int, p: float, value_at: Callable[[int], float]) -> float | None:
    """The value at rank (n - 1) * p, between its two closest ranks (NumPy's "linear")."""
    if not n:
        return None
    position = (n - 1) * p
    lower, higher = ranks(n, p)
    if lower == higher:
        return float(value_at(lower))
    return (higher - position) * value_at(lower) + (position - lower) * value_at(higher)


class Plan:
    """Step 2: which bucket and offset each rank of each group is at.

    ``members``: {group: the keys it is the union of}; ``wanted``: {group: the percentiles to
    find}. After pick(), ``value(group, p)`` is the exact percentile."""

    def __init__(
        self,
        found: dict[Key, dict[int, int]],
        members: dict[Group, Iterable[Key]],
        wanted: dict[Group, tuple[float, ...]],
    ) -> None:
        self.counts: dict[Group, int] = {}
        self.members: dict[Group, list[Key]] = {}
        self.found = found
        self.at: dict[tuple[Group, int], tuple[int, int]] = {}  # (group, rank): (bucket, offset)
        self.fine: set[tuple[Key, int]] = set()  # (key, bucket) whose rows pass 2 reads
        self.values: dict[tuple[Group, int, int], float] = {}  # (group, bucket, offset): value
        for group, keys in members.items():
            keys = self.members[group] = [k for k in keys if k in found]
            merged: dict[int, int] = defaultdict(int)
            for key in keys:
                for b, n in found[key].items():
                    merged[b] += n
            order = sorted(merged)
            ends = list(_running(merged[b] for b in order))  # rows up to and with each bucket
            n = ends[-1] if ends else 0
            self.counts[group] = n
            if not n:
                continue
            for p in wanted[group]:
                for rank in ranks(n, p):
                    i = bisect.bisect_right(ends, rank)
                    b = order[i]
                    self.at[(group, rank)] = (b, rank - (ends[i - 1] if i else 0))
                    self.fine.update((key, b) for key in keys if b in found[key])

    def buckets(self, series: str) -> list[int]:
        """The buckets of ``series`` pass 3 reads (for a cheap filter before the exact one)."""
        return sorted({b for key, b in self.fine if key[0] == series})

    def value(self, group: Group, p: float) -> float | None:
        def value_at(rank: int) -> float:
            b, offset = self.at[(group, rank)]
            return self.values[(group, b, offset)]

        return interpolate(self.counts.get(group, 0), p, value_at)

    def pick(self, spark: Any, facts: Any, names: tuple[str, ...] = ()) -> dict[Key, set[tuple]]:
        """Step 3: the values of the facts (KEYS, v, b) in the wanted cells come to the driver as
        two NumPy arrays (each value and the number of its cell: 12 bytes a value), sorted cell
        by cell, and each group's values in a bucket are read at the wanted offsets. ``facts``
        may hold more rows than those (say, every fact in a bucket any key wants): only the
        wanted cells' leave Spark. ``names``: more columns of the facts to bring back; what is
        returned is {key: the distinct values of those columns among its facts}."""
        import numpy as np

        if not self.at:
            return {}
        cells = list(self.fine)
        number = {cell: i for i, cell in enumerate(cells)}
        table = _table(spark, (*KEYS, "b", "cell"), [(*key, b, i) for i, (key, b) in enumerate(cells)])
        near = _cells(facts.select(*KEYS, "b", "v", *names), table, (*KEYS, "b"), names).toArrow()
        cell = near["cell"].to_numpy()
        counted = np.array([self.found[key][b] for key, b in cells])
        found = np.bincount(cell, minlength=len(cells))
        wrong = np.flatnonzero(found != counted)
        if wrong.size:
            key, b = cells[wrong[0]]
            raise Changed(f"{key} bucket {b}: {counted[wrong[0]]} values counted, {found[wrong[0]]} found")
        v = near["v"].to_numpy()
        values = v[np.lexsort((v, cell))]  # by cell, then by value
        ends = np.cumsum(found)

        def of(i: int) -> Any:  # the sorted values of cell i
            return values[ends[i] - found[i]:ends[i]]

        ranked: dict[tuple[Group, int], Any] = {}
        for (group, _), (b, offset) in self.at.items():
            if (group, b) not in ranked:
                parts = [of(number[(key, b)]) for key in self.members[group] if (key, b) in number]
                ranked[(group, b)] = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
            self.values[(group, b, offset)] = float(ranked[(group, b)][offset])
        seen: dict[Key, set[tuple]] = defaultdict(set)
        if names:
            named = near.select(["cell", *names]).group_by(["cell", *names]).aggregate([]).to_pylist()
            for r in named:
                seen[cells[r["cell"]][0]].add(tuple(r[n] for n in names))
        return dict(seen)


_TYPES = {"hour": "int64", "b": "int64", "cell": "int32"}  # the others: strings, or codes (whole numbers)


def _table(spark: Any, columns: tuple[str, ...], rows: list[tuple]) -> Any:
    """A small DataFrame of ``rows``, made through Arrow: Spark reads it in the JVM, where rows
    given as Python objects would start Python workers to unpickle them (a second or more). A
    key column holding whole numbers (codes) is int64, else string."""
    import pyarrow as pa

    def kind(i: int, column: str) -> Any:
        if column in _TYPES:
            return getattr(pa, _TYPES[column])()
        values = [r[i] for r in rows if r[i] is not None]
        return pa.int64() if values and all(isinstance(x, int) for x in values) else pa.string()

    schema = pa.schema([(c, kind(i, c)) for i, c in enumerate(columns)])
    return spark.createDataFrame(pa.Table.from_pylist([dict(zip(columns, r, strict=True)) for r in rows],
                                                      schema=schema))


def _running(values: Iterable[int]) -> Iterable[int]:
    total = 0
    for value in values:
        total += value
        yield total


def _cells(facts: Any, cells: Any, keys: tuple[str, ...], names: tuple[str, ...] = ()) -> Any:
    """The value (v), cell number and ``names`` of each fact whose ``keys`` are a row of
    ``cells`` (broadcast), NULL matching NULL."""
    from pyspark.sql import functions as F

    left, right = facts.alias("l"), F.broadcast(cells.alias("r"))
    same = reduce(lambda a, b: a & b, (F.col(f"l.{k}").eqNullSafe(F.col(f"r.{k}")) for k in keys))
    return left.join(right, same).select(F.col("r.cell").alias("cell"), F.col("l.v").alias("v"),
                                         *(F.col(f"l.{n}").alias(n) for n in names))

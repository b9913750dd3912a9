"""pipeline.archive: finished items out of a queue table into the Parquet archive
(relq.pipeline.layout), then out of the database, never neither.

1. Pick the cutoff once (UTC now less the age) and ask the database for the key
   span of the finished items that finished before it.
2. Split that span into key ranges (:func:`split`) and read each range in its
   own Spark partition, on its own connection, at READ COMMITTED (a row someone
   holds is waited for, not skipped as READPAST would: a skipped row would not
   be lost, since only rows read are purged, but it would be left for a later run).
3. Leave out the rows the archive already holds (same queue, EnqueuedAt and
   UpdatedAt: written by an earlier run that failed before its purge), write the
   others with layout.write, and read the archive back: every row read must be
   there, counted per key range, or nothing is purged.
4. Purge exactly the rows found in the archive, through dbo.Purge_<Queue>_trx's
   exact mode (@Keys: EnqueuedAt with the UpdatedAt that was archived), at most
   1,000 keys (one transaction) a call. An item changed since it was read (an
   operator's Retry_) or held by another session stays in the database; it is
   in the archive too, which is allowed: never neither. Such items are reported
   as kept.

A failure at any point leaves every row in the database, in the archive, or in
both: nothing is purged before the archive holds it. A re-run after a failure
archives each row once: rows already archived are not written again, and are
purged this time. An item that finished again after a retry is a new row
(another UpdatedAt), archived again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

from rich.console import Console

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.enqueue import exists
from relq.pipeline.progress import tracked
from relq.pipeline.queues import spec
from relq.pipeline.store import PURGE_LIMIT, Store

EPOCH = datetime(1970, 1, 1)
MICROSECOND = timedelta(microseconds=1)
RANGE_ROWS = 50_000  # a key range's expected rows, at most: one partition holds a range in memory
ISO_MICROS = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"


@dataclass(frozen=True)
class ArchiveResult:
    cutoff: datetime  # UTC: items that finished before it
    read: int  # finished items read from the database
    written: int  # rows written to the archive by this run
    already: int  # rows an earlier run had archived already
    purged: int  # removed from the database
    kept: int  # archived, but changed or held since they were read: still in the database


def split(first: datetime, last: datetime, parts: int) -> list[tuple[datetime, datetime]]:
    """``parts`` half-open key ranges [start, end) covering first..last (both included),
    in order, contiguous, none empty; fewer when the span has fewer microseconds."""
    if parts < 1:
        raise ValueError("parts must be 1 or more")
    if last < first:
        raise ValueError("last is before first")
    low = (first - EPOCH) // MICROSECOND
    high = (last - EPOCH) // MICROSECOND + 1
    parts = min(parts, high - low)
    bounds = [low + (high - low) * i // parts for i in range(parts + 1)]
    return [(EPOCH + bounds[i] * MICROSECOND, EPOCH + bounds[i + 1] * MICROSECOND) for i in range(parts)]


def _utc(value: Any) -> Any:
    """Naive UTC datetimes (as pyodbc returns DATETIME2) made aware: PySpark would take a
    naive one for the worker process's local time."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _reader(store: Store, queue: str, cutoff: datetime, archived_at: datetime
            ) -> Callable[[Iterable[tuple[int, tuple[datetime, datetime]]]], Iterator[tuple]]:
    s = spec(queue)
    names = ["Queue", *(name for name, _ in layout.COMMON), *(name for name, _ in s.own)]
    names.insert(1, "Type")

    def read(ranges: Iterable[tuple[int, tuple[datetime, datetime]]]) -> Iterator[tuple]:
        with store.session() as session:
            for index, (first, end) in ranges:
                for row in session.read_range(queue, first, end, cutoff):
                    values = {**row, "Queue": queue, "ArchivedAt": archived_at}
                    yield (*(_utc(values[name]) for name in names), index)

    return read


def _purger(store: Store, queue: str) -> Callable[[Iterable[Any]], Iterator[int]]:
    def purge(keys: Iterable[Any]) -> Iterator[int]:
        with store.session() as session:
            batch: list[tuple[str, str]] = []
            for key in keys:
                batch.append((key[0], key[1]))
                if len(batch) == PURGE_LIMIT:
                    yield session.purge(queue, batch)
                    batch = []
            if batch:
                yield session.purge(queue, batch)

    return purge


def archived_keys(spark: Any, root: str, queue: str, days: list[date]) -> Any | None:
    """(EnqueuedAt, UpdatedAt) of ``queue``'s archived rows of those UTC days (the
    archive's Day partitions: only those are read), or None when there are none yet."""
    from pyspark.sql import functions as F

    path = layout.queue_path(root, queue)
    if not days or not exists(spark, path):
        return None
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    frame = spark.read.option("basePath", root).parquet(path)
    wanted = [d.isoformat() for d in days]
    return frame.where(F.col("Day").cast("string").isin(wanted)).select("EnqueuedAt", "UpdatedAt")


def archive(spark: Any, store: Store, queue: str, root: str, *, older_than_minutes: int, partitions: int = 8,
            now: datetime | None = None, console: Console | None = None,
            range_rows: int = RANGE_ROWS) -> ArchiveResult:
    """Archive ``queue``'s items finished over ``older_than_minutes`` ago under ``root``,
    then purge them. ``now``: naive UTC (default: the clock)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    spec(queue)
    if older_than_minutes < 1 or partitions < 1:
        raise RelqError("--older-than-minutes and --partitions must be 1 or more")
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    cutoff = now - timedelta(minutes=older_than_minutes)
    with store.session() as session:
        span = session.finished_span(queue, cutoff)
    if span is None:
        return ArchiveResult(cutoff, 0, 0, 0, 0, 0)

    ranges = split(span.first, span.last, max(partitions, -(-span.count // range_rows)))
    rdd = spark.sparkContext.parallelize(list(enumerate(ranges)), len(ranges))
    rows = rdd.mapPartitions(_reader(store, queue, cutoff, _utc(now)))
    read = spark.createDataFrame(rows, schema=f"{spec(queue).ddl()}, Range INT")
    read = read.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with tracked(spark, "read", console):
            per_range = {r: n for r, n in read.groupBy("Range").count().collect()}
        total = sum(per_range.values())
        days = [row[0] for row in read.select(F.to_date("UpdatedAt")).distinct().collect()]

        before = archived_keys(spark, root, queue, days)
        new = read if before is None else read.join(before, ["EnqueuedAt", "UpdatedAt"], "left_anti")
        new = new.drop("Range").persist(StorageLevel.MEMORY_AND_DISK)
        try:
            written = new.count()
            with tracked(spark, "write", console):
                if written:
                    layout.write(new, root)
        finally:
            new.unpersist()

        after = archived_keys(spark, root, queue, days)
        if after is None:
            raise RelqError(f"{root}: the archive holds none of the {total} rows read; nothing was purged")
        confirmed = read.select("Range", "EnqueuedAt", "UpdatedAt").join(
            after.distinct(), ["EnqueuedAt", "UpdatedAt"], "left_semi").persist(StorageLevel.MEMORY_AND_DISK)
        try:
            found = {r: n for r, n in confirmed.groupBy("Range").count().collect()}
            short = {r: (n, found.get(r, 0)) for r, n in per_range.items() if found.get(r, 0) != n}
            if short:
                r, (n, got) = sorted(short.items())[0]
                raise RelqError(f"{root}: the archive holds {got} of the {n} rows read in key range {r} "
                                f"({len(short)} ranges short); nothing was purged")
            keys = confirmed.select(F.date_format("EnqueuedAt", ISO_MICROS),
                                    F.date_format("UpdatedAt", ISO_MICROS))
            with tracked(spark, "purge", console):
                purged = sum(keys.repartition(partitions).rdd.mapPartitions(_purger(store, queue)).collect())
        finally:
            confirmed.unpersist()
    finally:
        read.unpersist()
    return ArchiveResult(cutoff, total, written, total - written, purged, total - purged)

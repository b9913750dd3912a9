"""pipeline.archive: finished items out of a queue table into the Parquet archive
(relq.pipeline.layout), then out of the database, never neither.

0. Ask the database how it spells the queue (OBJECT_NAME of its worker view:
   SQL Server finds SYNCQUEUE's objects under a case-insensitive collation, but
   the lock's name is compared byte for byte and the archive's Queue partition
   is named by it), and use that spelling throughout. Take the session-owned
   application lock 'relq.pipeline.archive:<Queue>' on the driver's connection,
   held for the whole run: a second run of the same queue fails at once, in one
   line, instead of archiving the same rows twice. Just before the purge, check
   that the driver's session still holds it (a dropped connection takes it
   along): if not, stop, nothing purged. Releasing it at the end never hides the
   run's result or error: a failed release is reported, and the lock goes with
   its session.
1. Pick the cutoff once, on the database's clock (SYSUTCDATETIME() less the
   age), and ask the database how many finished items finished before it.
2. Split them into key ranges of equal row counts (the database numbers them in
   key order and returns every n-th key: :func:`ranges`) and read each range in
   its own Spark partition (a ``mapInArrow`` function over a range of one number
   a partition: the DataFrame API Spark Connect supports, no RDD), on its own
   connection, streamed, at READ COMMITTED
   (a row someone holds is waited for, not skipped as READPAST would: a skipped
   row would not be lost, since only rows read are purged, but it would be left
   for a later run).
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
5. Count, read-only, how many of the purged keys are still in the database:
   those are kept, the others purged. Counting after the fact keeps the figures
   right when Spark runs a purge task twice (a retry after a lost executor: the
   second run finds the first one's items gone and would report fewer).

The Spark session must be in UTC (spark.sql.session.timeZone; relq's own
sessions are): keys are formatted and days taken in the session's time zone.
The caller's session settings are never changed.

A failure at any point leaves every row in the database, in the archive, or in
both: nothing is purged before the archive holds it. A re-run after a failure
archives each row once: rows already archived are not written again, and are
purged this time. An item that finished again after a retry is a new row
(another UpdatedAt), archived again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

from rich.console import Console

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.progress import tracked
from relq.pipeline.queues import spec
from relq.pipeline.spark import ISO_MICROS, require_utc, unless_missing
from relq.pipeline.store import PURGE_LIMIT, Store

MICROSECOND = timedelta(microseconds=1)
RANGE_ROWS = 50_000  # a key range's rows, at most: a Spark task's worth (a retry reads one range again)
LOCK_PREFIX = "relq.pipeline.archive:"
BATCH_ROWS = 1000  # rows of a read range in one Arrow batch
COUNTED = "n BIGINT"  # what a purge or count task returns: a row per call


@dataclass(frozen=True)
class ArchiveResult:
    cutoff: datetime  # UTC, the database's clock: items that finished before it
    read: int  # finished items read from the database
    written: int  # rows written to the archive by this run
    already: int  # rows an earlier run had archived already
    purged: int  # removed from the database
    kept: int  # archived, but changed or held since they were read: still in the database


def ranges(starts: list[datetime], last: datetime) -> list[tuple[datetime, datetime]]:
    """Half-open key ranges [start, end) from the keys where each starts (ascending) to
    ``last`` (included): contiguous, in order, none empty."""
    if not starts:
        return []
    if any(b <= a for a, b in itertools.pairwise(starts)) or last < starts[-1]:
        raise ValueError("range starts must ascend, and last must not precede the last start")
    ends = [*starts[1:], last + MICROSECOND]
    return list(zip(starts, ends, strict=True))


def _utc(value: Any) -> Any:
    """Naive UTC datetimes (as pyodbc returns DATETIME2) made aware: PySpark would take a
    naive one for the worker process's local time."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _reader(store: Store, queue: str, cutoff: datetime, archived_at: datetime,
            key_ranges: list[tuple[datetime, datetime]]) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """A mapInArrow function: for each range number in its batches (a column ``id``), that key
    range's rows, read from the database, as Arrow batches of the archive's columns and Range."""
    s = spec(queue)
    names = ["Queue", *(name for name, _ in layout.COMMON), *(name for name, _ in s.own)]
    names.insert(1, "Type")
    kinds = dict((("Queue", "STRING"), ("Type", "STRING"), *layout.COMMON, *s.own))

    def read(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([*((name, layout.arrow_type(kinds[name])) for name in names),
                            ("Range", pa.int32())])
        indexes = [i for batch in batches for i in batch.column("id").to_pylist()]
        if not indexes:
            return
        with store.session() as session:
            for index in indexes:
                first, end = key_ranges[index]
                rows = session.read_range(queue, first, end, cutoff)
                while True:
                    chunk = list(itertools.islice(rows, BATCH_ROWS))
                    if not chunk:
                        break
                    values = [{**row, "Queue": queue, "ArchivedAt": archived_at} for row in chunk]
                    columns = {name: [_utc(value[name]) for value in values] for name in names}
                    columns["Range"] = [index] * len(chunk)
                    yield pa.RecordBatch.from_pydict(columns, schema=schema)

    return read


def _batched(store: Store, work: Callable[[Any, list[Any]], int]) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """A mapInArrow function: ``work(session, batch)`` for its rows (EnqueuedAt, UpdatedAt as
    ISO 8601 text), PURGE_LIMIT at a time; a row of ``n`` (what each call returned) per call."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([("n", pa.int64())])
        keys = (key for batch in batches for key in zip(batch.column("EnqueuedAt").to_pylist(),
                                                          batch.column("UpdatedAt").to_pylist(), strict=True))
        with store.session() as session:
            while True:
                chunk = list(itertools.islice(keys, PURGE_LIMIT))
                if not chunk:
                    return
                yield pa.RecordBatch.from_pydict({"n": [work(session, chunk)]}, schema=schema)

    return run


def _purger(store: Store, queue: str) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """Purge a partition's keys (EnqueuedAt, UpdatedAt): how many each call removed."""
    return _batched(store, lambda session, batch: session.purge(queue, batch))


def _counter(store: Store, queue: str) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """How many of a partition's keys are still in the queue: read only, so a retried task
    counts the same."""
    return _batched(store, lambda session, batch: session.remaining(queue, [k[0] for k in batch]))


def archived_keys(spark: Any, root: str, queue: str, days: list[date]) -> Any | None:
    """(EnqueuedAt, UpdatedAt) of ``queue``'s archived rows of those UTC days (the
    archive's Day partitions: only those are read), or None when there are none yet.
    The partition columns are in the schema given, so nothing is inferred from the
    paths and no session setting is touched."""
    from pyspark.sql import functions as F

    path = layout.queue_path(root, queue)
    if not days:
        return None
    frame = unless_missing(lambda: spark.read.option("basePath", root).schema(
        "EnqueuedAt TIMESTAMP, UpdatedAt TIMESTAMP, Queue STRING, Type STRING, Day STRING").parquet(path))
    if frame is None:
        return None
    wanted = [d.isoformat() for d in days]
    return frame.where(F.col("Day").isin(wanted)).select("EnqueuedAt", "UpdatedAt")


def _check_columns(driver: Any, name: str) -> None:
    """Refuse a queue whose worker view has columns the archive layout does not carry (the
    columns of a job queue's subtypes): its purge would remove what no file kept."""
    carried = {c.casefold() for c in spec(name).read_columns()}
    left_out = [c for c in driver.view_columns(name) if c.casefold() not in carried]
    if left_out:
        raise RelqError(f"queue {name}: dbo.Worker_{name}_V has columns the pipeline's archive does not "
                        f"carry ({', '.join(left_out)}: a subtype's); archive it with dbo.Purge_{name}_trx "
                        f"@Archive = 1 into dbo.{name}Archive instead; nothing was done")


def archive(spark: Any, store: Store, queue: str, root: str, *, older_than_minutes: int, partitions: int = 8,
            now: datetime | None = None, console: Console | None = None,
            range_rows: int = RANGE_ROWS) -> ArchiveResult:
    """Archive ``queue``'s items finished over ``older_than_minutes`` ago under ``root``,
    then purge them. ``now``: naive UTC (default: the database's clock)."""
    require_utc(spark, "archive")
    spec(queue)  # an unknown name is refused before anything is opened
    if older_than_minutes < 1 or partitions < 1 or range_rows < 1:
        raise RelqError("--older-than-minutes and --partitions must be 1 or more")
    with store.session() as driver:
        # The database's spelling, everywhere: the lock's name is compared byte for byte and
        # the archive's Queue partition is named by it (SYNCQUEUE would miss SyncQueue's rows).
        name = driver.queue_name(queue)
        _check_columns(driver, name)
        resource = LOCK_PREFIX + name
        if not driver.try_lock(resource):
            raise RelqError(f"another pipeline.archive of {name} is running (it holds the application lock "
                            f"{resource}); nothing was done")
        try:
            result = _archive(spark, store, driver, resource, name, root, older_than_minutes, partitions,
                              now or driver.now(), console, range_rows)
        except BaseException:
            _release(driver, resource, console)
            raise
        _release(driver, resource, console)
        return result


def _release(driver: Any, resource: str, console: Console | None) -> None:
    """Let go of the run's lock. A failure here is reported, never raised: it must not replace
    the run's result or its error (the lock goes when the session ends in any case)."""
    try:
        driver.unlock(resource)
    except Exception as exc:  # a dropped connection, typically: its session and lock are gone
        (console or Console(stderr=True)).print(
            f"pipeline.archive: could not release the application lock {resource} ({type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); it is released when its "
            f"session ends", markup=False, highlight=False)


def _archive(spark: Any, store: Store, driver: Any, resource: str, queue: str, root: str,
             older_than_minutes: int, partitions: int, now: datetime, console: Console | None,
             range_rows: int) -> ArchiveResult:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    cutoff = now - timedelta(minutes=older_than_minutes)
    span = driver.finished_span(queue, cutoff)
    if span is None:
        return ArchiveResult(cutoff, 0, 0, 0, 0, 0)
    parts = max(partitions, -(-span.count // range_rows))
    key_ranges = ranges(driver.range_starts(queue, cutoff, -(-span.count // parts)), span.last)
    if not key_ranges:
        return ArchiveResult(cutoff, 0, 0, 0, 0, 0)

    # One range number a partition (spark.range splits evenly): each key range is read by one task.
    numbers = spark.range(0, len(key_ranges), 1, len(key_ranges))
    read = numbers.mapInArrow(_reader(store, queue, cutoff, _utc(now), key_ranges),
                              f"{spec(queue).ddl()}, Range INT")
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
            # The lock is the session's: a connection dropped (an idle timeout, a failover, a kill)
            # took it along, and another run may be archiving the same rows. Stop before the purge.
            if not driver.holds_lock(resource):
                raise RelqError(f"the application lock {resource} was lost during the run (the driver's "
                                f"connection was dropped?); nothing was purged: the archive holds the rows, "
                                f"and a re-run purges them")
            keys = confirmed.select(F.date_format("EnqueuedAt", ISO_MICROS).alias("EnqueuedAt"),
                                    F.date_format("UpdatedAt", ISO_MICROS).alias("UpdatedAt"))
            keys = keys.repartition(partitions).persist(StorageLevel.MEMORY_AND_DISK)
            try:
                with tracked(spark, "purge", console):
                    keys.mapInArrow(_purger(store, queue), COUNTED).collect()
                with tracked(spark, "count", console):
                    kept = sum(row["n"] for row in keys.mapInArrow(_counter(store, queue), COUNTED).collect())
            finally:
                keys.unpersist()
        finally:
            confirmed.unpersist()
    finally:
        read.unpersist()
    return ArchiveResult(cutoff, total, written, total - written, total - kept, kept)

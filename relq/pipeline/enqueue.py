"""pipeline.enqueue: work items from Parquet, CSV or JSON into a queue.

1. Read the input with Spark and validate every row with DataFrame expressions:
   the rules of dbo.Add_SyncQueue_utx and the sizes of dbo.SyncQueueItemList's
   columns (Type a known job type, VARCHAR(50); EntityKey required, NVARCHAR(200)
   counted in UTF-16 units as SQL Server counts them; Payload a JSON object or
   array, as ISJSON accepts; ScheduledFor a timestamp, UTC unless the text says
   otherwise; Priority an integer from -32768 to 32767; GroupKey and DedupKey not
   blank, NVARCHAR(100) and NVARCHAR(200)).
2. Write every rejected row, as read, with a Reason column to the rejects
   dataset (Parquet). Nothing is dropped silently: a row the database refuses
   after all (a rule the validation does not know) lands there too.
3. Enqueue the valid rows from N Spark partitions in parallel, each on its own
   connection, in calls of up to 4,000 items to dbo.Add_SyncQueue_trx (set-based:
   one statement per call; the limit is the procedure's own).

Deduplication. A row without a DedupKey gets one derived from its content,
``relq:sha256:`` and the SHA-256 of its normalised fields (Type, EntityKey,
Payload as given, ScheduledFor in UTC microseconds, Priority, GroupKey): the
``relq:`` prefix is the pipeline's, so an application's own keys must not start
with it. Identical rows of one input are therefore one item. The database's
rule (dbo.Add_SyncQueue_utx) holds a key only while an unfinished item carries
it, so:

- a re-run while the first run's items are unfinished (Pending, Processing,
  Error, Paused) enqueues nothing again: each row gets the existing item;
- a re-run after items finished and were archived enqueues nothing again
  either, when it is given the archive (``archive``): rows whose DedupKey the
  archive holds for this queue are skipped before they reach the database;
- a re-run after items finished but before they were archived (or without the
  archive) enqueues those items again, as new items. That is the limit: to
  re-run safely later, archive first, or keep the input's own DedupKeys unique
  per piece of work and the window short.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.progress import tracked
from relq.pipeline.queues import ENQUEUE_QUEUES
from relq.pipeline.store import ENQUEUE_LIMIT, ItemRejected, Store

FORMATS = ("parquet", "csv", "json")
DERIVED_PREFIX = "relq:sha256:"
FIELDS = ("Type", "EntityKey", "Payload", "ScheduledFor", "Priority", "GroupKey", "DedupKey")
REQUIRED = ("Type", "EntityKey")
REASON = "Reason"
ISO_MICROS = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"  # in the session's time zone, which is UTC


@dataclass(frozen=True)
class EnqueueResult:
    rows: int  # read from the input
    rejected: int  # by the validation or by the database, all in the rejects dataset
    skipped: int  # already archived (their DedupKey is in the archive)
    enqueued: int  # new items
    duplicates: int  # rows whose item existed already (unfinished, same DedupKey), or repeated in the input


def read_input(spark: Any, path: str, fmt: str) -> Any:
    """The input as Spark reads it: Parquet with its types, CSV with a header row and
    every field as text (the validation parses them), JSON lines."""
    if fmt not in FORMATS:
        raise RelqError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    reader = spark.read
    if fmt == "csv":
        # RFC 4180: a quote inside a quoted field is doubled (Spark's default escape is \).
        reader = (reader.option("header", "true").option("inferSchema", "false").option("multiLine", "true")
                  .option("escape", '"'))
    try:
        frame = reader.format(fmt).load(path)
    except Exception as exc:  # Spark's AnalysisException: the path is missing or unreadable
        raise RelqError(f"{path}: cannot read it as {fmt} ({_first_line(exc)})") from None
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise RelqError(f"{path}: no column {', '.join(missing)} (an item needs {', '.join(REQUIRED)}; "
                        f"optional: {', '.join(f for f in FIELDS if f not in REQUIRED)})")
    return frame


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def validate(frame: Any, known_types: Sequence[str]) -> Any:
    """``frame`` with the normalised item columns (prefixed ``_``) and ``Reason``: NULL for
    a valid row, else the first rule it breaks."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, NumericType, StringType, TimestampNTZType, TimestampType

    types = {f.name: f.dataType for f in frame.schema.fields}

    def text(name: str) -> Any:
        if name not in types:
            return F.lit(None).cast("string")
        return F.col(f"`{name}`").cast("string")

    def utf16(column: Any) -> Any:  # NVARCHAR(n) counts UTF-16 code units, not characters
        return F.octet_length(F.encode(column, "UTF-16LE")) / 2

    def blank(column: Any) -> Any:  # LTRIM(RTRIM(x)) = N'': spaces only, as SQL Server trims
        return F.trim(column) == ""

    def scheduled() -> Any:
        kind = types.get("ScheduledFor")
        if kind is None:
            return F.lit(None).cast("timestamp")
        if isinstance(kind, (TimestampType, TimestampNTZType, DateType)):
            return F.col("ScheduledFor").cast("timestamp")
        if isinstance(kind, StringType):
            return F.try_to_timestamp(F.col("ScheduledFor"))
        return F.lit(None).cast("timestamp")  # anything else cannot be a time: refused below

    def priority() -> Any:
        kind = types.get("Priority")
        if kind is None:
            return F.lit(None).cast("bigint")
        if isinstance(kind, NumericType) and not isinstance(kind, StringType):
            return F.expr("try_cast(try_cast(`Priority` AS STRING) AS BIGINT)")
        return F.expr("try_cast(trim(`Priority`) AS BIGINT)")

    type_, entity, payload = text("Type"), text("EntityKey"), text("Payload")
    group, dedup = text("GroupKey"), text("DedupKey")
    when, prio = scheduled(), priority()
    given_when = text("ScheduledFor").isNotNull()
    given_prio = text("Priority").isNotNull()
    json_ok = F.try_parse_json(payload).isNotNull() & F.ltrim(payload).rlike(r"^[\[{]")
    reason = (
        F.when(type_.isNull() | blank(type_), "Type is required")
        .when(~type_.isin(list(known_types)), "Type is not a job type of this queue")
        .when(entity.isNull() | blank(entity), "EntityKey is required")
        .when(utf16(entity) > 200, "EntityKey is longer than 200 characters")
        .when(payload.isNotNull() & ~json_ok, "Payload is not a JSON object or array")
        .when(given_when & when.isNull(), "ScheduledFor is not a timestamp (ISO 8601; UTC unless it says)")
        .when(given_prio & prio.isNull(), "Priority is not an integer")
        .when(given_prio & ~prio.between(-32768, 32767), "Priority must be -32768 to 32767")
        .when(blank(group), "GroupKey must not be blank: leave it empty for none")
        .when(utf16(group) > 100, "GroupKey is longer than 100 characters")
        .when(blank(dedup), "DedupKey must not be blank: leave it empty for none")
        .when(utf16(dedup) > 200, "DedupKey is longer than 200 characters")
    )
    when_text = F.date_format(when, ISO_MICROS)
    content = F.to_json(F.struct(type_.alias("Type"), entity.alias("EntityKey"), payload.alias("Payload"),
                                 when_text.alias("ScheduledFor"), prio.alias("Priority"),
                                 group.alias("GroupKey")))
    derived = F.concat(F.lit(DERIVED_PREFIX), F.sha2(content, 256))
    return frame.select(
        "*",
        type_.alias("_Type"), entity.alias("_EntityKey"), payload.alias("_Payload"),
        when_text.alias("_ScheduledFor"), prio.cast("int").alias("_Priority"), group.alias("_GroupKey"),
        F.coalesce(dedup, derived).alias("_DedupKey"),
        reason.alias(REASON),
    )


def archived_dedup_keys(spark: Any, archive: str, queue: str) -> Any | None:
    """The DedupKeys the archive holds for ``queue`` (a one-column frame), or None when
    it holds nothing of that queue yet."""
    path = layout.queue_path(archive, queue)
    if not exists(spark, path):
        return None
    return (spark.read.option("basePath", archive).schema("DedupKey STRING").parquet(path)
            .where("DedupKey IS NOT NULL").select("DedupKey").distinct())


def exists(spark: Any, path: str) -> bool:
    """Whether ``path`` exists, on any file system Spark's Hadoop configuration reaches."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path))


def _sender(store: Store, queue: str, limit: int) -> Callable[[Iterable[Any]], Iterator[tuple]]:
    """What each Spark partition runs: its rows, in calls of up to ``limit`` items on one
    connection. Yields ("enqueued", n), ("duplicates", n) and ("rejected", row JSON, reason)."""

    def send(rows: Iterable[Any]) -> Iterator[tuple]:
        with store.session() as session:
            batch: list[dict[str, Any]] = []
            for row in rows:
                batch.append(row.asDict())
                if len(batch) == limit:
                    yield from _call(session, queue, batch)
                    batch = []
            if batch:
                yield from _call(session, queue, batch)

    return send


def _call(session: Any, queue: str, rows: list[dict[str, Any]]) -> Iterator[tuple]:
    """One call; an item the database refuses is taken out (and reported) and the rest
    is sent again: a call writes all of its items or none."""
    while rows:
        items = [{"ItemNo": n, **{f: row[f"_{f}"] for f in FIELDS}} for n, row in enumerate(rows, start=1)]
        try:
            outcome = session.enqueue(queue, items)
        except ItemRejected as exc:
            if not 1 <= exc.item_no <= len(rows):
                raise
            bad = rows.pop(exc.item_no - 1)
            yield ("rejected", bad["_input"], f"refused by the database: {exc.reason}")
            continue
        duplicates = sum(1 for _, duplicate in outcome if duplicate)
        yield ("enqueued", len(outcome) - duplicates)
        yield ("duplicates", duplicates)
        return


def enqueue(spark: Any, store: Store, queue: str, frame: Any, *, known_types: Sequence[str], rejects: str,
            archive: str | None = None, partitions: int = 8, console: Console | None = None,
            limit: int = ENQUEUE_LIMIT) -> EnqueueResult:
    """Validate ``frame`` (as :func:`read_input` gives it), write the rejects to ``rejects``
    (Parquet, replaced), and enqueue the valid rows into ``queue``."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if queue not in ENQUEUE_QUEUES:
        raise RelqError(f"pipeline.enqueue fills {', '.join(ENQUEUE_QUEUES)}; {queue} has no set-based "
                        f"enqueue procedure yet")
    if not 1 <= limit <= ENQUEUE_LIMIT or partitions < 1:
        raise RelqError(f"--partitions must be 1 or more (and a call takes 1 to {ENQUEUE_LIMIT} items)")
    input_columns = frame.columns
    checked = validate(frame, known_types).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with tracked(spark, "validate", console):
            rows = checked.count()
            bad = checked.where(F.col(REASON).isNotNull()).select(*[f"`{c}`" for c in input_columns], REASON)
            bad.write.mode("overwrite").parquet(rejects)
            rejected = bad.count()

        valid = checked.where(F.col(REASON).isNull()).select(
            F.to_json(F.struct(*[F.col(f"`{c}`") for c in input_columns])).alias("_input"),
            *[f"_{f}" for f in FIELDS])
        skipped = 0
        done = archived_dedup_keys(spark, archive, queue) if archive else None
        if done is not None:
            fresh = valid.join(done, valid["_DedupKey"] == done["DedupKey"], "left_anti")
            skipped = valid.count() - fresh.count()
            valid = fresh

        with tracked(spark, "enqueue", console):
            outcomes = valid.repartition(partitions).rdd.mapPartitions(_sender(store, queue, limit)).collect()
    finally:
        checked.unpersist()

    refused = [(o[1], o[2]) for o in outcomes if o[0] == "rejected"]
    if refused:
        late = spark.createDataFrame(refused, f"_input STRING, {REASON} STRING")
        parsed = late.select(F.from_json("_input", frame.schema).alias("r"), REASON).select("r.*", REASON)
        parsed.write.mode("append").parquet(rejects)
    return EnqueueResult(
        rows=rows,
        rejected=rejected + len(refused),
        skipped=skipped,
        enqueued=sum(o[1] for o in outcomes if o[0] == "enqueued"),
        duplicates=sum(o[1] for o in outcomes if o[0] == "duplicates"),
    )

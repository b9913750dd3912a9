"""pipeline.enqueue: work items from Parquet, CSV or JSON into a queue: any job
queue (dbo.Add_<Queue>_trx), or Notification (password-reset notifications,
dbo.Add_Notification_ResetPassword_Batch_trx).

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
   connection (a ``mapInArrow`` function: Python beside the data, on a classic
   session and on Spark Connect alike), in calls of up to 4,000 items to
   dbo.Add_<Queue>_trx (set-based: one statement per call; the limit is the
   procedure's own). The partitions
   overlap validation, conversion, network I/O and the inserts: a call takes its
   keys without a lock. A call that found no free keys or waited too long for a
   DedupKey's lock (735709), or lost a deadlock (1205), wrote nothing and is sent
   again (relq.pipeline.store).
   Notifications are sent from the driver instead (see below).

Notifications (--queue Notification) are password-reset notifications, one per
row: UserID (a positive integer), Username (at most 128), OTP (4 to 10 letters
or digits), EmailTo (an e-mail address, as dbo.EmailIsValid_fn accepts it) and
PreferredLanguage (a tag such as en or en-GB), PhoneNumber (E.164, as
dbo.PhoneIsValid_fn accepts it), at least one of the two channels, and the
optional ScheduledFor, Priority, GroupKey and DedupKey of every queue. The
validation is as strict as the database's rules or stricter (ASCII only, where
a collation could let SQL Server's LIKE admit a look-alike character); a row
the database refuses all the same lands in the rejects with its reason.

Deduplication. A row without a DedupKey gets one derived from its content,
``relq:sha256:`` and the SHA-256 of its normalised fields (Type, EntityKey,
Payload as given, ScheduledFor in UTC microseconds, Priority, GroupKey; for a
notification UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber,
ScheduledFor, Priority, GroupKey): the
``relq:`` prefix is the pipeline's, so an application's own keys must not start
with it. Identical rows of one input are therefore one item. The database's
rule (dbo.Add_<Queue>_utx) holds a key only while an unfinished item carries
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

DedupKeys are compared as the database compares them (its collation: case and
trailing spaces ignored), also against the archive.

Notifications are sent once. A Spark task that is run again (its executor was
lost after the task's calls committed) would send its rows again, and a
password-reset item finishes in seconds: by then its DedupKey no longer holds,
and the user would get a second code. So a notification run validates in Spark
but sends from the driver, which iterates the valid rows partition by partition
(DataFrame.toLocalIterator: a partition recomputed after a lost executor is
still delivered to the driver once), in partitions of about one call (4,000
rows) each, so the driver holds one call's rows at a time. A call of 4,000 rows
is one set-based statement per table, so little is lost. Job
queues, whose items are idempotent by DedupKey only while unfinished too but
whose handlers own their idempotence, keep sending from the executors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.progress import tracked
from relq.pipeline.queues import JOB, spec
from relq.pipeline.spark import ISO_MICROS, require_utc, unless_missing
from relq.pipeline.store import ENQUEUE_LIMIT, ItemRejected, Store

FORMATS = ("parquet", "csv", "json")
DERIVED_PREFIX = "relq:sha256:"
FIELDS = ("Type", "EntityKey", "Payload", "ScheduledFor", "Priority", "GroupKey", "DedupKey")
REQUIRED = ("Type", "EntityKey")
NOTIFICATION_FIELDS = ("UserID", "Username", "OTP", "EmailTo", "PreferredLanguage", "PhoneNumber",
                       "ScheduledFor", "Priority", "GroupKey", "DedupKey")
NOTIFICATION_REQUIRED = ("UserID", "Username", "OTP")
REASON = "Reason"
# dbo.EmailIsValid_fn, as patterns: its LIKE tests one by one (see _email_ok).
EMAIL_SHAPE = r"(?s)^.+@.+\..+\z"  # NOT LIKE N'_%@_%._%'
# [^\x21-\x7E]: ASCII only. Under a width-insensitive collation the database's LIKE also refuses
# the full-width look-alikes of these characters (U+FF0C, U+FF20, U+3000 ...); refusing every
# character beyond ASCII here keeps Spark at least as strict (a row the database refuses is sent
# again without it, with the rest of its call).
EMAIL_FORBIDDEN = r"[^\x21-\x7E]|[,;:<>()\"]|@.*@|\.\.|^\.|\.$|\.@|@\."
PHONE = r"^\+[1-9][0-9]{7,14}\z"  # dbo.PhoneIsValid_fn: +, a non-zero digit, 7 to 14 more
OTP = r"^[0-9A-Za-z]{4,10}\z"  # \z: Java's $ also matches before a final line break
LANGUAGE = r"^[A-Za-z-]{2,12}\z"
INT_MAX = 2_147_483_647
# What a partition's sender returns, a row per call or refused item: ("enqueued", n),
# ("duplicates", n) or ("rejected", 1, the row as JSON, the database's reason).
OUTCOME = "kind STRING, items BIGINT, input STRING, reason STRING"


@dataclass(frozen=True)
class EnqueueResult:
    rows: int  # read from the input
    rejected: int  # by the validation or by the database, all in the rejects dataset
    skipped: int  # already archived (their DedupKey is in the archive)
    enqueued: int  # new items
    duplicates: int  # rows whose item existed already (unfinished, same DedupKey), or repeated in the input


def read_input(spark: Any, path: str, fmt: str, queue: str = "SyncQueue") -> Any:
    """The input as Spark reads it: Parquet with its types, CSV with a header row and
    every field as text (the validation parses them), JSON lines."""
    if fmt not in FORMATS:
        raise RelqError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    required, fields = (REQUIRED, FIELDS) if spec(queue).kind == JOB else (NOTIFICATION_REQUIRED,
                                                                            NOTIFICATION_FIELDS)
    reader = spark.read
    if fmt == "csv":
        # RFC 4180: a quote inside a quoted field is doubled (Spark's default escape is \).
        reader = (reader.option("header", "true").option("inferSchema", "false").option("multiLine", "true")
                  .option("escape", '"'))
    try:
        frame = reader.format(fmt).load(path)
        columns = frame.columns  # Spark Connect reads the path only when the plan is analysed: here
    except Exception as exc:  # Spark's AnalysisException: the path is missing or unreadable
        raise RelqError(f"{path}: cannot read it as {fmt} ({_first_line(exc)})") from None
    missing = [c for c in required if c not in columns]
    if missing:
        raise RelqError(f"{path}: no column {', '.join(missing)} (an item needs {', '.join(required)}; "
                        f"optional: {', '.join(f for f in fields if f not in required)})")
    return frame


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class _Columns:
    """The input's columns as the validation reads them, whatever their Spark types."""

    def __init__(self, frame: Any) -> None:
        self.types = {f.name: f.dataType for f in frame.schema.fields}

    def text(self, name: str) -> Any:
        from pyspark.sql import functions as F

        if name not in self.types:
            return F.lit(None).cast("string")
        return F.col(f"`{name}`").cast("string")

    def given(self, name: str) -> Any:
        return self.text(name).isNotNull()

    def integer(self, name: str) -> Any:
        """A whole number (BIGINT), NULL when absent or not one ("1.5", "high", NaN). A
        fractional column holding a whole number (12.0: pandas writes float64 for an
        integer column with nulls) is one; beyond +-1e18 it is clamped there, to be
        refused as out of range rather than as not a number."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegralType

        kind = self.types.get(name)
        column = f"`{name}`"
        if kind is None:
            return F.lit(None).cast("bigint")
        if isinstance(kind, IntegralType):
            return F.col(column).cast("bigint")
        if isinstance(kind, (FloatType, DoubleType, DecimalType)):
            # try_cast('12.0' AS BIGINT) is NULL in Spark 4 (ANSI): test and cast the number itself.
            # NaN first (Spark orders it above every number), the range before floor (whose BIGINT
            # result overflows, an error under ANSI, for a double beyond it).
            nan = f"WHEN isnan({column}) THEN NULL " if not isinstance(kind, DecimalType) else ""
            return F.expr(f"CASE WHEN {column} IS NULL THEN NULL {nan}"
                          f"WHEN {column} > 1e18 THEN 1000000000000000000L "
                          f"WHEN {column} < -1e18 THEN -1000000000000000000L "
                          f"WHEN {column} <> floor({column}) THEN NULL "
                          f"ELSE CAST({column} AS BIGINT) END")
        return F.expr(f"try_cast(trim({column}) AS BIGINT)")

    def timestamp(self, name: str) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql.types import DateType, StringType, TimestampNTZType, TimestampType

        kind = self.types.get(name)
        if kind is None:
            return F.lit(None).cast("timestamp")
        if isinstance(kind, (TimestampType, TimestampNTZType, DateType)):
            return F.col(f"`{name}`").cast("timestamp")
        if isinstance(kind, StringType):
            return F.try_to_timestamp(F.col(f"`{name}`"))
        return F.lit(None).cast("timestamp")  # anything else cannot be a time: refused


def utf16(column: Any) -> Any:
    """NVARCHAR(n) counts UTF-16 code units, not characters."""
    from pyspark.sql import functions as F

    return F.octet_length(F.encode(column, "UTF-16LE")) / 2


def blank(column: Any) -> Any:
    """LTRIM(RTRIM(x)) = N'': spaces only, as SQL Server trims."""
    from pyspark.sql import functions as F

    return F.trim(column) == ""


def _common_rules(cols: _Columns, reason: Any) -> tuple[Any, dict[str, Any]]:
    """The rules of the columns every queue has (ScheduledFor, Priority, GroupKey, DedupKey)
    added to ``reason``, and those columns normalised."""
    when, prio = cols.timestamp("ScheduledFor"), cols.integer("Priority")
    group, dedup = cols.text("GroupKey"), cols.text("DedupKey")
    reason = (
        reason
        .when(cols.given("ScheduledFor") & when.isNull(),
              "ScheduledFor is not a timestamp (ISO 8601; UTC unless it says)")
        .when(cols.given("Priority") & prio.isNull(), "Priority is not an integer")
        .when(cols.given("Priority") & ~prio.between(-32768, 32767), "Priority must be -32768 to 32767")
        .when(blank(group), "GroupKey must not be blank: leave it empty for none")
        .when(utf16(group) > 100, "GroupKey is longer than 100 characters")
        .when(blank(dedup), "DedupKey must not be blank: leave it empty for none")
        .when(utf16(dedup) > 200, "DedupKey is longer than 200 characters")
    )
    from pyspark.sql import functions as F

    return reason, {"ScheduledFor": F.date_format(when, ISO_MICROS), "Priority": prio,
                    "GroupKey": group, "DedupKey": dedup}


def _finish(frame: Any, fields: Sequence[str], values: dict[str, Any], reason: Any) -> Any:
    """``frame`` with the normalised ``fields`` (prefixed ``_``), the DedupKey derived where
    none is given, and ``Reason``."""
    from pyspark.sql import functions as F

    content = F.to_json(F.struct(*[values[f].alias(f) for f in fields if f != "DedupKey"]))
    derived = F.concat(F.lit(DERIVED_PREFIX), F.sha2(content, 256))
    out = {**values, "DedupKey": F.coalesce(values["DedupKey"], derived),
           "Priority": values["Priority"].try_cast("int")}  # NULL for a rejected row out of range
    return frame.select("*", *[out[f].alias(f"_{f}") for f in fields], reason.alias(REASON))


def validate(frame: Any, known_types: Sequence[str]) -> Any:
    """``frame`` (job items) with the normalised item columns (prefixed ``_``) and ``Reason``:
    NULL for a valid row, else the first rule it breaks."""
    from pyspark.sql import functions as F

    cols = _Columns(frame)
    type_, entity, payload = cols.text("Type"), cols.text("EntityKey"), cols.text("Payload")
    json_ok = F.try_parse_json(payload).isNotNull() & F.ltrim(payload).rlike(r"^[\[{]")
    reason = (
        F.when(type_.isNull() | blank(type_), "Type is required")
        .when(~type_.isin(list(known_types)), "Type is not a job type of this queue")
        .when(entity.isNull() | blank(entity), "EntityKey is required")
        .when(utf16(entity) > 200, "EntityKey is longer than 200 characters")
        .when(payload.isNotNull() & ~json_ok, "Payload is not a JSON object or array")
    )
    reason, common = _common_rules(cols, reason)
    values = {"Type": type_, "EntityKey": entity, "Payload": payload, **common}
    return _finish(frame, FIELDS, values, reason)


def _email_ok(email: Any) -> Any:
    """dbo.EmailIsValid_fn in Spark: at most 254 (UTF-16 units), one @ with something on
    both sides and a dot after it, no spaces, list separators or line breaks, no empty
    labels. (SQL Server's LIKE may also match look-alikes under a width-insensitive
    collation; these patterns do not, so they refuse at least what it refuses.)"""
    return (utf16(email) <= 254) & email.rlike(EMAIL_SHAPE) & ~email.rlike(EMAIL_FORBIDDEN)


def validate_notifications(frame: Any) -> Any:
    """``frame`` (password-reset notifications) with the normalised item columns (prefixed
    ``_``) and ``Reason``: the rules of dbo.Add_Notification_ResetPassword_Batch_utx and the
    sizes of its list type's columns."""
    from pyspark.sql import functions as F

    cols = _Columns(frame)
    user_id, username, otp = cols.integer("UserID"), cols.text("Username"), cols.text("OTP")
    email, language, phone = cols.text("EmailTo"), cols.text("PreferredLanguage"), cols.text("PhoneNumber")
    reason = (
        F.when(~cols.given("UserID"), "UserID is required")
        .when(user_id.isNull(), "UserID is not an integer")
        .when(~user_id.between(1, INT_MAX), "UserID must be a positive integer (at most 2147483647)")
        .when(username.isNull() | blank(username), "Username is required")
        .when(utf16(username) > 128, "Username is longer than 128 characters")
        .when(otp.isNull() | ~otp.rlike(OTP), "OTP must be 4 to 10 letters or digits")
        .when(email.isNull() & phone.isNull(), "EmailTo or PhoneNumber is required: a notification needs a "
                                               "channel")
        .when(email.isNotNull() & ~_email_ok(email), "EmailTo is not an e-mail address")
        .when(phone.isNotNull() & ~phone.rlike(PHONE), "PhoneNumber is not an E.164 number such as "
                                                       "+14155550123")
        .when(language.isNotNull() & ~language.rlike(LANGUAGE),
              "PreferredLanguage must be a language tag such as en or en-GB")
    )
    reason, common = _common_rules(cols, reason)
    values = {"UserID": user_id, "Username": username, "OTP": otp, "EmailTo": email,
              "PreferredLanguage": language, "PhoneNumber": phone, **common}
    return _finish(frame, NOTIFICATION_FIELDS, values, reason)


def same_key(column: Any) -> Any:
    """A DedupKey as the database compares it: its collation ignores case and trailing spaces."""
    from pyspark.sql import functions as F

    return F.upper(F.rtrim(column))


def archived_dedup_keys(spark: Any, archive: str, queue: str) -> Any | None:
    """The DedupKeys the archive holds for ``queue`` (a one-column frame, ``DedupKey``, as
    :func:`same_key` normalises them), or None when it holds nothing of that queue yet.
    ``queue`` is spelled as the database spells it (the archive's partitions are)."""
    from pyspark.sql import functions as F

    path = layout.queue_path(archive, queue)
    read = unless_missing(lambda: spark.read.option("basePath", archive).schema("DedupKey STRING")
                          .parquet(path))
    if read is None:
        return None
    return read.where("DedupKey IS NOT NULL").select(same_key(F.col("DedupKey")).alias("DedupKey")).distinct()


def _sender(store: Store, queue: str, fields: Sequence[str], limit: int
            ) -> Callable[[Iterable[dict[str, Any]]], Iterator[tuple]]:
    """What sends a partition's rows (dicts of the valid rows' columns): in calls of up to
    ``limit`` items on one connection. Yields ("enqueued", n), ("duplicates", n) and ("rejected",
    row JSON, reason)."""

    def send(rows: Iterable[dict[str, Any]]) -> Iterator[tuple]:
        with store.session() as session:
            batch: list[dict[str, Any]] = []
            for row in rows:
                batch.append(row)
                if len(batch) == limit:
                    yield from _call(session, queue, fields, batch)
                    batch = []
            if batch:
                yield from _call(session, queue, fields, batch)

    return send


def _in_arrow(send: Callable[[Iterable[dict[str, Any]]], Iterator[tuple]]
              ) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """``send`` as a mapInArrow function: Arrow record batches of rows in, of OUTCOME out, a batch
    per call (Spark sends a partition's rows in batches of 10,000 by default; a call is 4,000)."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([("kind", pa.string()), ("items", pa.int64()), ("input", pa.string()),
                            ("reason", pa.string())])
        rows = (row for batch in batches for row in batch.to_pylist())
        for outcome in send(rows):
            if outcome[0] == "rejected":
                kind, items, given, reason = "rejected", 1, outcome[1], outcome[2]
            else:
                kind, items, given, reason = outcome[0], outcome[1], None, None
            yield pa.RecordBatch.from_pydict({"kind": [kind], "items": [items], "input": [given],
                                              "reason": [reason]}, schema=schema)

    return run


def _call(session: Any, queue: str, fields: Sequence[str], rows: list[dict[str, Any]]) -> Iterator[tuple]:
    """One call; an item the database refuses is taken out (and reported) and the rest
    is sent again: a call writes all of its items or none."""
    while rows:
        items = [{"ItemNo": n, **{f: row[f"_{f}"] for f in fields}} for n, row in enumerate(rows, start=1)]
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


def enqueue(spark: Any, store: Store, queue: str, frame: Any, *, known_types: Sequence[str] = (),
            rejects: str, archive: str | None = None, partitions: int = 8, console: Console | None = None,
            limit: int = ENQUEUE_LIMIT) -> EnqueueResult:
    """Validate ``frame`` (as :func:`read_input` gives it), write the rejects to ``rejects``
    (Parquet, replaced), and enqueue the valid rows into ``queue``: a job queue (whose job
    types are ``known_types``) or Notification."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    require_utc(spark, "enqueue")
    s = spec(queue)
    if not 1 <= limit <= ENQUEUE_LIMIT or partitions < 1:
        raise RelqError(f"--partitions must be 1 or more (and a call takes 1 to {ENQUEUE_LIMIT} items)")
    with store.session() as session:
        name = session.queue_name(s.name)  # the database's spelling: the archive's partitions use it
    if s.kind == JOB:
        fields, checked = FIELDS, validate(frame, known_types)
    else:
        fields, checked = NOTIFICATION_FIELDS, validate_notifications(frame)
    input_columns = frame.columns
    checked = checked.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with tracked(spark, "validate", console):
            rows = checked.count()
            bad = checked.where(F.col(REASON).isNotNull()).select(*[f"`{c}`" for c in input_columns], REASON)
            bad.write.mode("overwrite").parquet(rejects)
            rejected = bad.count()

        valid = checked.where(F.col(REASON).isNull()).select(
            F.to_json(F.struct(*[F.col(f"`{c}`") for c in input_columns])).alias("_input"),
            *[f"_{f}" for f in fields])
        skipped = 0
        done = archived_dedup_keys(spark, archive, name) if archive else None
        if done is not None:
            fresh = valid.join(done, same_key(valid["_DedupKey"]) == done["DedupKey"], "left_anti")
            skipped = valid.count() - fresh.count()
            valid = fresh

        with tracked(spark, "enqueue", console):
            send = _sender(store, name, fields, limit)
            if s.kind == JOB:
                sent = valid.repartition(partitions).mapInArrow(_in_arrow(send), OUTCOME).collect()
                outcomes = [("rejected", r["input"], r["reason"]) if r["kind"] == "rejected"
                            else (r["kind"], r["items"]) for r in sent]
            else:  # from the driver, each row once (see the module's docstring)
                chunks = max(1, -(-valid.count() // limit))
                outcomes = list(send(row.asDict() for row in valid.repartition(chunks).toLocalIterator()))
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

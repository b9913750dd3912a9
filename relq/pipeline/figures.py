"""The report's figures, computed in Spark from archive rows (relq.pipeline.layout).

Definitions (the JSON's "definitions" repeats them; tests recompute them with pandas):

- **items**: archived rows; every figure below is per queue, job type and step (the
  step an item finished at; Step NULL is a job's first step, JSON null), with roll-ups
  per queue and type, per queue, and over everything.
- **wait** (ms): how long the item's *last* attempt waited for a worker, StartedAt minus
  its due time max(EnqueuedAt, ScheduledFor), at least 0 (a key handed out a few
  microseconds ahead of the clock, then claimed at once, starts "before" it was due). The
  row keeps only the last attempt (each claim overwrites StartedAt, each Error report
  ScheduledFor), so for a retried item this is the wait after its last backoff, not since
  it was enqueued. Items never claimed (StartedAt NULL) have no wait, nor have Cancelled
  items whose ScheduledFor is after StartedAt: cancelled while backing off, their
  ScheduledFor is the due time of a retry that never ran.
- **duration** (ms): the Duration column (the last attempt's milliseconds); when it is
  NULL (a row with none: archived before Duration was kept), UpdatedAt minus StartedAt for the
  items whose last move ended that attempt (Completed, Failed, PartiallyCompleted,
  Terminated). Items never claimed, or cancelled while backing off, have none; nor have
  items failed because the lease of their last attempt expired (Error starting with
  LEASE_EXPIRED, written by dbo.Next_SyncQueue_utx): their worker vanished, so the row's
  Duration is an earlier attempt's and UpdatedAt - StartedAt the lease plus the delay until
  the next claim ran, neither the attempt's.
- **percentiles** p50, p95, p99: exact, over every value of the group, with linear
  interpolation between the two closest ranks: the value at rank (n - 1) * p counting from
  0 (what NumPy's default method "linear", Spark's percentile() and DuckDB's quantile_cont
  compute). Not percentile_approx: the report is a batch job over an archive, and exact
  figures can be checked. Found without sorting the groups (relq.pipeline.percentiles): a
  histogram of log-spaced buckets says which bucket holds each rank, and only the rows of
  those buckets are ranked.
- **retry rate**: the share of items with AttemptNum > 1. It misses items an operator
  retried by hand (Retry_ puts AttemptNum back to 0) and that then finished at their first
  new attempt: the archive keeps no count of manual retries. **failure rate**: the share
  with Status 'Failed'. Each status is counted too (FINISHED, plus "other" for any state
  that is not a finished one).
- **throughput**: finished items (Status in FINISHED) per UTC hour of UpdatedAt (when they
  finished), per queue and status. Hours without any are left out.
- **hourly**: per queue and UTC hour, the items enqueued in it (EnqueuedAt), those finished
  in it (UpdatedAt, Status in FINISHED), their difference (the backlog growing when
  positive, counted over the archived items only: items still queued are not in the
  archive) and the wait p95 of the attempts that started in it (StartedAt). The last hour of
  the archive (the one of its last finish) is marked partial: it ends at that finish, not at
  the hour's end, so its counts are not an hour's.
- **errors**: per queue and type, the most frequent error texts of Failed items (kind
  "failed"; an empty text is "(no error text)") and of the items retried before they
  finished otherwise (kind "retried": AttemptNum > 1 and an Error kept from the Error attempt
  that preceded the retry; the archive keeps only the latest). Texts are grouped with their
  numbers, hexadecimal ids and GUIDs replaced by "#", runs of spaces made one; each group
  keeps one example as written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

from relq.pipeline import percentiles as exact
from relq.pipeline.spark import cores, excluding, settings

PERCENTILES = (0.5, 0.95, 0.99)
HOURLY_PERCENTILE = 0.95
MEASURES = ("wait_ms", "duration_ms")
HOURLY = "wait_ms/hour"  # the series of waits per queue and hour their attempt started
FINISHED = ("Completed", "Failed", "Cancelled", "Terminated", "PartiallyCompleted")
ENDED_BY_ATTEMPT = ("Completed", "Failed", "PartiallyCompleted", "Terminated")
# The start of the Error dbo.Next_SyncQueue_utx writes when it fails an item whose worker
# vanished on its last attempt: such a row's Duration and StartedAt are not of an attempt
# that ended (see DEFINITIONS["duration_ms"]).
LEASE_EXPIRED = "the lease of the last attempt expired"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
HOUR_US = 3_600_000_000
_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_FILE_TASKS = "spark.sql.files.minPartitionNum"
LEVELS = {0: "step", 1: "type", 3: "queue", 7: "all"}  # as grouping_id of rollup(Queue, Type, Step)
# Buckets per unit of ln(ms) (relq.pipeline.percentiles): 256 (0.4 % wide) for the groups of the
# tables, 16 (6 % wide) for the waits per queue and hour, groups a hundred times smaller.
SCALE = {"wait_ms": 256, "duration_ms": 256, HOURLY: 16}
TOP_ERRORS = 5  # error texts per queue, type and kind
NO_ERROR_TEXT = "(no error text)"
ERROR_CHARS = 300  # an error text is grouped and kept up to this many characters
# Numbers, hexadecimal ids and GUIDs vary between items that failed for one reason.
_VARYING = (
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|0x[0-9a-fA-F]+|[0-9]+"
)

# Spark 4's optimizer turns a SUM over a grouped COUNT(1) into one count of the rows (SPARK-57043,
# https://github.com/apache/spark/pull/56129): error_texts' two aggregations would become one over
# every failed item, its regular expressions run on each and its example (min of a string) sort
# them all: the pass took 1.6 to 2 times as long at five million rows. errors() plans it without
# that rule.
COLLAPSES_COUNTS = "org.apache.spark.sql.catalyst.optimizer.CollapseGroupedSumOfCount"

DEFINITIONS = {
    "wait_ms": "StartedAt - max(EnqueuedAt, ScheduledFor) of the last attempt, at least 0; none for "
    "items never claimed, nor for Cancelled items whose ScheduledFor is after StartedAt "
    "(cancelled while backing off)",
    "duration_ms": "Duration (the last attempt's ms); when NULL, UpdatedAt - StartedAt for Completed, "
    "Failed, PartiallyCompleted and Terminated items; none for items failed because the lease "
    f"of their last attempt expired (Error starting '{LEASE_EXPIRED}': their worker vanished)",
    "percentiles": "exact: linear interpolation at rank (n - 1) * p (from 0) over the group's sorted "
    "values (as NumPy's method 'linear', Spark's percentile() and DuckDB's quantile_cont)",
    "retry_rate": "items with AttemptNum > 1 / items; misses items an operator retried by hand (Retry_ "
    "puts AttemptNum back to 0) that then finished at their first new attempt",
    "failure_rate": "items with Status 'Failed' / items",
    "throughput": "finished items per UTC hour of UpdatedAt, per queue and status; empty hours left out",
    "hourly": "per queue and UTC hour: items enqueued (EnqueuedAt) and finished (UpdatedAt) in it, of "
    "the archived items only, and the wait p95 of the attempts started in it (StartedAt); the "
    "hour of the archive's last finish is partial (it ends at that finish)",
    "errors": f"per queue and type, the {TOP_ERRORS} most frequent error texts of Failed items ('failed') "
    "and of items retried before finishing otherwise ('retried': AttemptNum > 1, the Error "
    "kept from the attempt before the retry), grouped with numbers, hexadecimal ids and GUIDs "
    "replaced by '#'",
    "step": "the step an item finished at; null is a job's first step (or a roll-up, see level)",
}


class Empty(Exception):
    """The archive holds no rows."""


class NotAnArchive(Exception):
    """Rows without what every archived row has: a Queue, a Type, an EnqueuedAt."""


def prepare(frame: Any) -> Any:
    """The archive rows reduced to what the figures need: keys, times as microseconds since
    1970 (enqueued_us, updated_us, started_us), wait_ms and duration_ms."""
    from pyspark.sql import functions as F

    enqueued, started, updated = (F.unix_micros(F.col(c)) for c in ("EnqueuedAt", "StartedAt", "UpdatedAt"))
    scheduled = F.unix_micros(F.coalesce(F.col("ScheduledFor"), F.col("EnqueuedAt")))
    due = F.greatest(enqueued, scheduled)
    backing_off = (F.col("Status") == "Cancelled") & (scheduled > started)
    # greatest() skips NULLs: without a due time greatest(0, NULL) would be a wait of 0.
    wait = F.when(
        started.isNotNull() & due.isNotNull() & ~backing_off, F.greatest(F.lit(0), started - due) / 1000.0
    )
    lease_expired = (F.col("Status") == "Failed") & F.coalesce(
        F.col("Error").startswith(LEASE_EXPIRED), F.lit(False)
    )
    duration = (
        F.when(lease_expired, F.lit(None).cast("double"))
        .when(F.col("Duration").isNotNull(), F.col("Duration").cast("double"))
        .when(started.isNotNull() & F.col("Status").isin(*ENDED_BY_ATTEMPT), (updated - started) / 1000.0)
    )
    return frame.select(
        "Queue",
        "Type",
        "Step",
        "Status",
        "AttemptNum",
        "Error",
        enqueued.alias("enqueued_us"),
        updated.alias("updated_us"),
        started.alias("started_us"),
        wait.alias("wait_ms"),
        duration.alias("duration_ms"),
    )


def compute(frame: Any, meanwhile: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    """Every figure of the report from archive rows (a DataFrame in the layout), as plain
    JSON-ready values: {"summary", "groups", "throughput", "hourly", "errors"}. Three passes
    over the rows: one aggregation for every count and histogram, one filter for the values at
    the percentiles' ranks (relq.pipeline.percentiles), one for the error texts.

    ``meanwhile``: work of this process's on the figures but the errors (the report's charts),
    done while Spark counts the error texts (the third pass, from a thread of its own): the
    charts, Python's work, and the pass, Spark's, take their time side by side."""
    with settings(frame.sparkSession, sized(cores(frame.sparkSession))):
        numbers = _compute(frame)
        with ThreadPoolExecutor(1, thread_name_prefix="relq-errors") as pool:
            texts = pool.submit(errors, frame)
            if meanwhile is not None:
                meanwhile(numbers)
            numbers["errors"] = texts.result()
        return numbers


def sized(cores: int) -> dict[str, str]:
    """The report's Spark settings for ``cores`` cores (its passes are planned with them; the
    caller's own come back after):

    - every shuffle carries a small result (aggregates, the rows at a few ranks): as many
      partitions as the cores, not Spark's 200, each of which every map task writes a file for
      (that alone cost more than half of the report);
    - the archive's files are read in at least four tasks a core. Spark packs files into as
      many tasks as the cores when they are small beside spark.sql.files.maxPartitionBytes
      (128 MiB): a million rows of history came in two tasks of 68 % and 32 % of the rows, one
      core idle for a third of each pass. More, smaller tasks share the rows out evenly; a
      large archive is split by maxPartitionBytes as before. ("spark.sql.files.minPartitionNum:
      the suggested (not guaranteed) minimum number of split file partitions",
      https://spark.apache.org/docs/latest/sql-performance-tuning.html)"""
    cores = max(2, cores)
    return {_SHUFFLE_PARTITIONS: str(cores), _FILE_TASKS: str(4 * cores)}


def _compute(frame: Any) -> dict[str, Any]:
    rows = measured(prepare(frame))
    tally, found = _aggregate(rows)
    if not tally:
        raise Empty
    if any(r["bad"] for r in tally):
        raise NotAnArchive
    counts = _counts(tally)
    plan = exact.Plan(found, *_wanted(counts, tally))
    seen = plan.pick(rows.sparkSession, _facts(rows, plan), names=NAMES)
    names = _names(frame, tally, seen)
    groups = sorted((_group(key, c, plan, names) for key, c in counts.items()), key=_order)
    summary = next(g for g in groups if g["level"] == "all")
    spans = {name: _span(tally, name, pick) for name, pick in _SPANS.items()}
    last_hour = spans["last_updated"] // HOUR_US
    return {
        "summary": {
            **{k: v for k, v in summary.items() if k not in ("queue", "type", "step", "level")},
            "first_enqueued": _iso(spans["first_enqueued"]),
            "first_finished": _iso(spans["first_updated"]),
            "last_finished": _iso(spans["last_updated"]),
            "partial_hour": _iso(last_hour * HOUR_US),
        },
        "groups": [g for g in groups if g["level"] != "all"],
        "throughput": _throughput(tally, names),
        "hourly": _hourly(tally, plan, last_hour, names),
    }


def measured(rows: Any) -> Any:
    """prepare()'s rows with the hours, the buckets of their values (percentiles.bucket) and the
    codes pass 1 groups by: ``qts``, ``qt`` and ``q``, 64-bit hashes (xxhash64) of the row's
    (Queue, Type, Step), (Queue, Type) and Queue, and ``sr``: the status (its place in FINISHED,
    0 for any other), whether retried, and whether the row lacks a Queue, Type or EnqueuedAt."""
    from pyspark.sql import functions as F

    def hour(column: str) -> Any:
        return F.floor(F.col(column) / HOUR_US).cast("long")

    status = F.coalesce(F.array_position(F.array(*(F.lit(s) for s in FINISHED)), F.col("Status")), F.lit(0))
    bad = F.col("Queue").isNull() | F.col("Type").isNull() | F.col("enqueued_us").isNull()
    retried = F.coalesce(F.col("AttemptNum") > 1, F.lit(False))
    return rows.select(
        "*",
        retried.alias("retried"),
        (status * 2 + retried.cast("long") + F.when(bad, 16).otherwise(0)).cast("long").alias("sr"),
        F.xxhash64("Queue", "Type", "Step").alias("qts"),
        F.xxhash64("Queue", "Type").alias("qt"),
        F.xxhash64("Queue").alias("q"),
        hour("enqueued_us").alias("enqueued_hour"),
        hour("updated_us").alias("updated_hour"),
        (hour("started_us") * HOUR_US).alias("started_hour"),
        *(
            exact.bucket(F.col(_VALUE[series]), scale).alias(_BUCKET[series])
            for series, scale in SCALE.items()
        ),
    )


_VALUE = {"wait_ms": "wait_ms", "duration_ms": "duration_ms", HOURLY: "wait_ms"}  # each series' values
_BUCKET = {"wait_ms": "b_wait", "duration_ms": "b_duration", HOURLY: "b_hourly"}  # and their buckets
# Pass 1's entries: k1 says which (below 256: the tally, its value sr), k2..k4 the rest of the key.
_ENTRY = {"wait_ms": 1 << 8, "duration_ms": 2 << 8, HOURLY: 3 << 8}
NAMES = ("queue_name", "type_name", "step_name")  # what the facts bring back to name the codes


class Collision(Exception):
    """Two groups of the archive share a 64-bit hash code (measured): their figures would be one
    group's. Found where the rows of both are seen by name."""


def _aggregate(rows: Any) -> tuple[list[dict[str, Any]], dict[tuple, dict[int, int]]]:
    """Pass 1, one aggregation of four entries a row, each a key of four numbers: the tally,
    items per (Queue, Type, Step) code, status, retried, hour enqueued and hour finished, with
    their first and last times, which every count of the report adds up (a few thousand rows a
    week of history); and the histograms, {(series, q, qt, qts, hour): {bucket: rows}} (hourly
    waits: (series, q, None, None, hour)), whose sums count the waits and durations of each
    group (percentiles.Plan.counts).

    Keys of numbers only: Spark hashes and compares each entry's 32 bytes, in its own fast hash
    map, where grouping sets of the names made it hash and compare a wide key with four strings
    four times a row. The four entries come from SQL's UNPIVOT of four columns at once, which
    Spark plans as one Expand of plain columns (a struct per entry, exploded, cost a fifth more:
    docs/performance.md)."""
    from pyspark.sql import functions as F

    def entry(name: str, k1: Any, k2: str, k3: Any, k4: Any) -> list[Any]:
        return [k1.cast("long").alias(f"{name}1"), F.col(k2).alias(f"{name}2"),
                k3.cast("long").alias(f"{name}3"), k4.cast("long").alias(f"{name}4")]

    zero = F.lit(0)
    entries = rows.select(
        *entry("t", F.col("sr"), "qts", F.col("enqueued_hour"), F.col("updated_hour")),
        *entry("w", F.lit(_ENTRY["wait_ms"]), "qts", F.col("b_wait"), zero),
        *entry("d", F.lit(_ENTRY["duration_ms"]), "qts", F.col("b_duration"), zero),
        *entry("h", F.lit(_ENTRY[HOURLY]), "q", F.col("b_hourly"), F.col("started_hour")),
        "enqueued_us", "updated_us", "qt", "q",
    )
    keyed = rows.sparkSession.sql(
        "SELECT k1, k2, k3, k4, enqueued_us, updated_us, qt, q FROM {entries} UNPIVOT INCLUDE NULLS "
        "((k1, k2, k3, k4) FOR entry IN "
        "((t1, t2, t3, t4), (w1, w2, w3, w4), (d1, d2, d3, d4), (h1, h2, h3, h4)))",
        entries=entries)
    table = (
        keyed.where((F.col("k1") < _ENTRY["wait_ms"]) | F.col("k3").isNotNull())  # a value in a bucket
        .groupBy("k1", "k2", "k3", "k4")
        .agg(
            F.count(F.lit(1)).alias("items"),
            F.min("enqueued_us").alias("first_enqueued"),
            F.min("updated_us").alias("first_updated"),
            F.max("updated_us").alias("last_updated"),
            F.max("qt").alias("qt"),  # one per (Queue, Type, Step) code: its type's
            F.max("q").alias("q"),
        )
        .toArrow()
    )
    import pyarrow.compute as pc

    counts = pc.less(table["k1"], _ENTRY["wait_ms"])
    tally: list[dict[str, Any]] = []
    for r in table.filter(counts).to_pylist():
        k1, status = r["k1"], (r["k1"] >> 1) & 7
        tally.append({"Queue": r["q"], "Type": r["qt"], "Step": r["k2"], "bad": bool(k1 & 16),
                      "Status": FINISHED[status - 1] if status else None, "retried": bool(k1 & 1),
                      "enqueued_hour": r["k3"], "updated_hour": r["k4"], "items": r["items"],
                      **{name: r[name] for name in _SPANS}})
    series_of = {number: series for series, number in _ENTRY.items()}
    found: dict[tuple, dict[int, int]] = defaultdict(dict)
    histograms = table.filter(pc.invert(counts))
    columns = (histograms[name].to_pylist() for name in ("k1", "k2", "k3", "k4", "items", "qt", "q"))
    for k1, k2, k3, k4, items, qt, q in zip(*columns, strict=True):  # column by column: far quicker
        series = series_of[k1]
        key = (series, q, None, None, k4) if series == HOURLY else (series, q, qt, k2, None)
        found[key][k3] = items
    return tally, found


def _names(frame: Any, tally: list[dict[str, Any]], seen: dict[tuple, set[tuple]]) -> dict[tuple, tuple]:
    """{(q, qt, qts): (Queue, Type, Step)} for every group of the tally, from the names the facts
    brought back (pass 2); groups with no value in any bucket the plan read (no wait and no
    duration at all: rare) are looked up in the archive, one more read. A code with two names is
    a Collision."""
    from pyspark.sql import functions as F

    named: dict[tuple, set[tuple]] = defaultdict(set)
    for key, names in seen.items():
        if key[0] != HOURLY:
            named[key[1:4]] |= names
    wanted = {(r["Queue"], r["Type"], r["Step"]) for r in tally}
    missing = sorted(code for code in wanted if code not in named)
    if missing:
        codes = frame.select(F.xxhash64("Queue").alias("q"), F.xxhash64("Queue", "Type").alias("qt"),
                             F.xxhash64("Queue", "Type", "Step").alias("qts"), "Queue", "Type", "Step")
        for r in codes.where(F.col("qts").isin([c[2] for c in missing])).distinct().toArrow().to_pylist():
            named[(r["q"], r["qt"], r["qts"])].add((r["Queue"], r["Type"], r["Step"]))
    out = {}
    for code in wanted:
        names = named.get(code, set())
        if len(names) != 1:
            raise Collision(f"{code}: {sorted(names, key=repr)}")
        out[code] = next(iter(names))
    for level, size in ((1, 2), (0, 1)):  # a type's, a queue's code: one name each
        by: dict[Any, set] = defaultdict(set)
        for code, names in out.items():
            by[code[level]].add(names[:size])
        if any(len(names) > 1 for names in by.values()):
            raise Collision(f"{sorted(by.items(), key=repr)}")
    return out


def _counts(tally: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """The tally added up per group of every level: {(gid, q, qt, qts): counts}."""
    found: dict[tuple, dict[str, Any]] = defaultdict(
        lambda: {"items": 0, "retried": 0, "statuses": dict.fromkeys((*FINISHED, "other"), 0)})
    for row in tally:
        status = row["Status"] if row["Status"] in FINISHED else "other"
        for gid in LEVELS:
            c = found[_level_key(gid, row["Queue"], row["Type"], row["Step"])]
            c["items"] += row["items"]
            c["retried"] += row["items"] if row["retried"] else 0
            c["statuses"][status] += row["items"]
    return dict(found)


_SPANS = {"first_enqueued": min, "first_updated": min, "last_updated": max}


def _span(tally: list[dict[str, Any]], name: str, pick: Any) -> int | None:
    """The archive's first or last time ``name`` (microseconds), from the tally's per row."""
    values = [r[name] for r in tally if r[name] is not None]
    return pick(values) if values else None


def _level_key(gid: int, queue: Any, type_: Any, step: Any) -> tuple:
    return (gid, queue if gid < 7 else None, type_ if gid < 3 else None, step if gid == 0 else None)


def _facts(rows: Any, plan: exact.Plan) -> Any:
    """The rows' values as facts of relq.pipeline.percentiles (KEYS, v, b; Queue, Type and Step
    their codes) with their names (NAMES), those in a bucket the plan reads only: a wait and a
    duration under the row's codes, a wait under its queue's and the hour its attempt started."""
    from pyspark.sql import functions as F

    none_code, none_hour = F.lit(None).cast("long"), F.lit(None).cast("long")

    def fact(series: str, type_: Any, step: Any, hour: Any) -> Any:
        return F.when(
            F.col(_BUCKET[series]).isin(plan.buckets(series)),
            F.struct(
                F.lit(series).alias("s"),
                F.col("q").alias("Queue"),
                type_.alias("Type"),
                step.alias("Step"),
                hour.alias("hour"),
                F.col(_VALUE[series]).alias("v"),
                F.col(_BUCKET[series]).alias("b"),
                *(F.col(column).alias(name)
                  for column, name in zip(("Queue", "Type", "Step"), NAMES, strict=True)),
            ),
        )

    near = F.array_compact(
        F.array(
            fact("wait_ms", F.col("qt"), F.col("qts"), none_hour),
            fact("duration_ms", F.col("qt"), F.col("qts"), none_hour),
            fact(HOURLY, none_code, none_code, F.col("started_hour")),
        )
    )
    # No filter on a computed column: Spark would push it below the projections, computing
    # every value again inside it; an empty array simply yields no row.
    return rows.select(F.inline(near))


def _wanted(counts: dict[tuple, dict[str, Any]], tally: list[dict[str, Any]]) -> tuple[dict, dict]:
    """For percentiles.Plan: each group's keys, and the percentiles it needs."""
    steps = {(r["Queue"], r["Type"], r["Step"]) for r in tally}
    members: dict[tuple, list[tuple]] = defaultdict(list)
    wanted: dict[tuple, tuple[float, ...]] = {}
    for m in MEASURES:
        for queue, type_, step in steps:
            for gid in LEVELS:
                group = (m, *_level_key(gid, queue, type_, step), None)
                members[group].append((m, queue, type_, step, None))
                wanted[group] = PERCENTILES
    for queue in {r["Queue"] for r in tally}:
        for hour in _started_hours(tally, queue):
            group = (HOURLY, 0, queue, None, None, hour)
            members[group] = [(HOURLY, queue, None, None, hour)]
            wanted[group] = (HOURLY_PERCENTILE,)
    return members, wanted


def _started_hours(tally: list[dict[str, Any]], queue: Any) -> range:
    """Every hour an attempt of ``queue`` may have started in (from its first enqueue to its
    last finish), in microseconds: the plan leaves out those without any."""
    rows = [r for r in tally if r["Queue"] == queue]
    first = min(r["enqueued_hour"] for r in rows)
    last = max(r["updated_hour"] for r in rows)
    return range(first * HOUR_US, (last + 1) * HOUR_US, HOUR_US)


def _named(key: tuple, names: dict[tuple, tuple]) -> tuple:
    """A group's (queue, type, step) names from its key (gid, q, qt, qts): None where rolled up."""
    gid, queue, type_, step = key
    if gid == 7:
        return (None, None, None)
    for (q, qt, qts), (queue_name, type_name, step_name) in names.items():
        if q == queue and (gid >= 3 or qt == type_) and (gid > 0 or qts == step):
            return (queue_name if gid < 7 else None, type_name if gid < 3 else None,
                    step_name if gid == 0 else None)
    raise KeyError(key)


def _group(key: tuple, c: dict[str, Any], plan: exact.Plan, names: dict[tuple, tuple]) -> dict[str, Any]:
    gid = key[0]
    items = c["items"]
    queue, type_, step = _named(key, names)
    return {
        "level": LEVELS[gid],
        "queue": queue,
        "type": type_,
        "step": step,
        "items": items,
        "statuses": c["statuses"],
        "retried": c["retried"],
        "retry_rate": c["retried"] / items,
        "failed": c["statuses"]["Failed"],
        "failure_rate": c["statuses"]["Failed"] / items,
        **{
            m: {
                "count": plan.counts.get((m, *key, None), 0),
                **{f"p{round(p * 100)}": plan.value((m, *key, None), p) for p in PERCENTILES},
            }
            for m in MEASURES
        },
    }


def _queue_names(names: dict[tuple, tuple]) -> dict[Any, str]:
    return {code[0]: named[0] for code, named in names.items()}


def _throughput(tally: list[dict[str, Any]], names: dict[tuple, tuple]) -> list[dict[str, Any]]:
    queues = _queue_names(names)
    per: dict[tuple, int] = defaultdict(int)
    for r in tally:
        if r["Status"] in FINISHED:
            per[(queues[r["Queue"]], r["updated_hour"], r["Status"])] += r["items"]
    return [
        {"queue": q, "hour": _iso(h * HOUR_US), "status": s, "items": n}
        for (q, h, s), n in sorted(per.items())
    ]


def _hourly(tally: list[dict[str, Any]], plan: exact.Plan, last_hour: int,
            names: dict[tuple, tuple]) -> list[dict[str, Any]]:
    """Per queue and hour with anything enqueued, finished or started in it."""
    queues = _queue_names(names)
    enqueued: dict[tuple, int] = defaultdict(int)
    finished: dict[tuple, int] = defaultdict(int)
    for r in tally:
        enqueued[(r["Queue"], r["enqueued_hour"])] += r["items"]
        if r["Status"] in FINISHED:
            finished[(r["Queue"], r["updated_hour"])] += r["items"]
    started = {(g[2], g[5] // HOUR_US) for g, n in plan.counts.items() if g[0] == HOURLY and n}
    out = []
    for queue, hour in sorted({*enqueued, *finished, *started}, key=lambda k: (queues[k[0]], k[1])):
        group = (HOURLY, 0, queue, None, None, hour * HOUR_US)
        out.append(
            {
                "queue": queues[queue],
                "hour": _iso(hour * HOUR_US),
                "enqueued": enqueued.get((queue, hour), 0),
                "finished": finished.get((queue, hour), 0),
                "wait_count": plan.counts.get(group, 0),
                "wait_ms_p95": plan.value(group, HOURLY_PERCENTILE),
                "partial": hour == last_hour,
            }
        )
    return out


def errors(rows: Any) -> list[dict[str, Any]]:
    """Pass 3: the TOP_ERRORS most frequent error texts per queue, type and kind, grouped;
    each with its count, and the kind's total items and number of distinct texts. ``rows``:
    archive rows as read (it reads their columns Queue, Type, Status, AttemptNum and Error)."""
    spark = rows.sparkSession
    by_kind: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    with settings(spark, excluding(spark, COLLAPSES_COUNTS)):  # read when the query is planned
        # A row per grouped text: few, unless the texts vary in more than numbers and ids.
        for r in error_texts(rows).toArrow().to_pylist():
            by_kind[(r["Queue"], r["Type"], r["kind"])].append(r)
    out = []
    for (queue, type_, kind), texts in sorted(by_kind.items()):
        top = sorted(texts, key=lambda r: (-r["items"], r["error"]))[:TOP_ERRORS]
        total = sum(r["items"] for r in texts)
        out += [{"queue": queue, "type": type_, "kind": kind, "rank": rank, "error": r["error"],
                 "example": r["example"], "items": r["items"], "texts": len(texts), "kind_items": total}
                for rank, r in enumerate(top, 1)]
    return out


def error_texts(rows: Any) -> Any:
    """Items per queue, type, kind and grouped error text, with an example as written (a
    DataFrame: Queue, Type, kind, error, items, example). Counted as written first, a hash
    aggregation (a row per distinct text, far fewer than items where texts repeat), then grouped:
    the regular expressions run once per distinct text, and the example (the min of a string,
    which Spark aggregates by sorting its rows, SortAggregate in the plan) is taken over those
    rows, not over every failed item. Planned as such without COLLAPSES_COUNTS only."""
    from pyspark.sql import functions as F

    text = F.trim(F.coalesce(F.col("Error"), F.lit("")))
    kind = F.when(F.col("Status") == "Failed", F.lit("failed")).when(
        (F.col("AttemptNum") > 1) & (text != ""), F.lit("retried")
    )
    shown = F.when(text == "", F.lit(NO_ERROR_TEXT)).otherwise(F.substring(text, 1, ERROR_CHARS))
    written = (
        rows.where((F.col("Status") == "Failed") | (F.col("AttemptNum") > 1))  # cheap, first
        .where(kind.isNotNull())
        .groupBy("Queue", "Type", kind.alias("kind"), shown.alias("shown"))
        .agg(F.count(F.lit(1)).alias("items"))
    )
    grouped = F.regexp_replace(F.regexp_replace(F.col("shown"), _VARYING, "#"), r"\s+", " ")
    return written.groupBy("Queue", "Type", "kind", grouped.alias("error")).agg(
        F.sum("items").alias("items"), F.min("shown").alias("example")
    )


def _order(group: dict[str, Any]) -> tuple:
    """Queues, then their types, then steps (the first step first); roll-ups before details."""
    depth = ("all", "queue", "type", "step").index(group["level"])
    return (group["queue"] or "", group["type"] or "", depth, group["step"] is not None, group["step"] or "")


def _iso(micros: int | None) -> str | None:
    """Microseconds since 1970 (UTC) as ISO 8601 with a Z. Times leave Spark as numbers:
    PySpark turns a collected timestamp into the Python process's local time."""
    if micros is None:
        return None
    value = EPOCH + timedelta(microseconds=micros)
    return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"

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
  0 (what Spark's percentile() and NumPy's default method "linear" compute). Not
  percentile_approx: the report is a batch job over an archive, and exact figures can be
  checked. Not percentile() either: it keeps a map of every distinct value of a group in
  memory, and with microsecond waits that ran a 1 GiB heap out at 5 million rows. Here each
  group's values are ranked (a window sort, which spills to disk) and only the rows at the
  ranks needed come back.
- **retry rate**: the share of items with AttemptNum > 1. It misses items an operator
  retried by hand (Retry_ puts AttemptNum back to 0) and that then finished at their first
  new attempt: the archive keeps no count of manual retries. **failure rate**: the share
  with Status 'Failed'. Each status is counted too (FINISHED, plus "other" for any state
  that is not a finished one).
- **throughput**: finished items (Status in FINISHED) per UTC hour of UpdatedAt (when they
  finished), per queue and status. Hours without any are left out.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from functools import reduce
from typing import Any

PERCENTILES = (0.5, 0.95, 0.99)
MEASURES = ("wait_ms", "duration_ms")
FINISHED = ("Completed", "Failed", "Cancelled", "Terminated", "PartiallyCompleted")
ENDED_BY_ATTEMPT = ("Completed", "Failed", "PartiallyCompleted", "Terminated")
# The start of the Error dbo.Next_SyncQueue_utx writes when it fails an item whose worker
# vanished on its last attempt: such a row's Duration and StartedAt are not of an attempt
# that ended (see DEFINITIONS["duration_ms"]).
LEASE_EXPIRED = "the lease of the last attempt expired"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
LEVELS = {0: "step", 1: "type", 3: "queue", 7: "all"}  # grouping_id of rollup(Queue, Type, Step)

DEFINITIONS = {
    "wait_ms": "StartedAt - max(EnqueuedAt, ScheduledFor) of the last attempt, at least 0; none for "
               "items never claimed, nor for Cancelled items whose ScheduledFor is after StartedAt "
               "(cancelled while backing off)",
    "duration_ms": "Duration (the last attempt's ms); when NULL, UpdatedAt - StartedAt for Completed, "
                   "Failed, PartiallyCompleted and Terminated items; none for items failed because the lease "
                   f"of their last attempt expired (Error starting '{LEASE_EXPIRED}': their worker vanished)",
    "percentiles": "exact: linear interpolation at rank (n - 1) * p (from 0) over the group's sorted "
                   "values (as Spark's percentile() and NumPy's method 'linear')",
    "retry_rate": "items with AttemptNum > 1 / items; misses items an operator retried by hand (Retry_ "
                  "puts AttemptNum back to 0) that then finished at their first new attempt",
    "failure_rate": "items with Status 'Failed' / items",
    "throughput": "finished items per UTC hour of UpdatedAt, per queue and status; empty hours left out",
    "step": "the step an item finished at; null is a job's first step (or a roll-up, see level)",
}


class Empty(Exception):
    """The archive holds no rows."""


def _micros(column: str) -> Any:
    from pyspark.sql import functions as F

    return F.unix_micros(F.col(column))


def prepare(frame: Any) -> Any:
    """The archive rows reduced to what the figures need, with wait_ms and duration_ms."""
    from pyspark.sql import functions as F

    scheduled = F.coalesce(F.col("ScheduledFor"), F.col("EnqueuedAt"))
    due_us = F.greatest(_micros("EnqueuedAt"), F.unix_micros(scheduled))
    backing_off = (F.col("Status") == "Cancelled") & (scheduled > F.col("StartedAt"))
    # greatest() skips NULLs: without a due time greatest(0, NULL) would be a wait of 0.
    wait = F.when(
        F.col("StartedAt").isNotNull() & due_us.isNotNull() & ~backing_off,
        F.greatest(F.lit(0), _micros("StartedAt") - due_us) / 1000.0,
    )
    elapsed = (_micros("UpdatedAt") - _micros("StartedAt")) / 1000.0
    lease_expired = F.coalesce(F.col("Error").startswith(LEASE_EXPIRED), F.lit(False))
    duration = (F.when(lease_expired, F.lit(None).cast("double"))
                .when(F.col("Duration").isNotNull(), F.col("Duration").cast("double"))
                .when(F.col("StartedAt").isNotNull() & F.col("Status").isin(*ENDED_BY_ATTEMPT), elapsed))
    return frame.select("Queue", "Type", "Step", "Status", "AttemptNum", "EnqueuedAt", "UpdatedAt",
                        wait.alias("wait_ms"), duration.alias("duration_ms"))


def compute(frame: Any) -> dict[str, Any]:
    """Every figure of the report from archive rows (a DataFrame in the layout), as plain
    JSON-ready values: {"summary", "groups", "throughput"}. Three Spark jobs: counts per group,
    percentiles per group, throughput per hour."""
    from pyspark.sql import functions as F

    rows = prepare(frame)
    by_status = [F.count(F.when(F.col("Status") == status, 1)).alias(f"n_{status}") for status in FINISHED]
    grouped = rows.rollup("Queue", "Type", "Step").agg(
        F.grouping_id().alias("gid"),
        F.count(F.lit(1)).alias("items"),
        F.count(F.when(F.col("AttemptNum") > 1, 1)).alias("retried"),
        *by_status,
        F.count("wait_ms").alias("wait_n"),
        F.count("duration_ms").alias("duration_n"),
        F.min(_micros("EnqueuedAt")).alias("first_enqueued"),
        F.max(_micros("UpdatedAt")).alias("last_updated"),
        F.min(_micros("UpdatedAt")).alias("first_updated"),
    ).collect()
    spans = next((row for row in grouped if row["gid"] == 7), None)
    if spans is None:  # a roll-up of no rows has no rows, not even the total
        raise Empty
    counts = {(row["gid"], row["Queue"], row["Type"], row["Step"]): {m: row[f"{m[:-3]}_n"] for m in MEASURES}
              for row in grouped}
    found = percentiles(rows, counts)
    groups = sorted((_group(row, found) for row in grouped), key=_order)
    summary = next(g for g in groups if g["level"] == "all")

    hour = F.unix_micros(F.date_trunc("hour", F.col("UpdatedAt"))).alias("hour")
    hourly = (rows.where(F.col("Status").isin(*FINISHED))
              .groupBy("Queue", hour, "Status")
              .agg(F.count(F.lit(1)).alias("items"))
              .orderBy("Queue", "hour", "Status").collect())
    throughput = [{"queue": r["Queue"], "hour": _iso(r["hour"]), "status": r["Status"], "items": r["items"]}
                  for r in hourly]
    return {
        "summary": {**{k: v for k, v in summary.items() if k not in ("queue", "type", "step", "level")},
                    "first_enqueued": _iso(spans["first_enqueued"]),
                    "first_finished": _iso(spans["first_updated"]),
                    "last_finished": _iso(spans["last_updated"])},
        "groups": [g for g in groups if g["level"] != "all"],
        "throughput": throughput,
    }


def percentiles(rows: Any, counts: dict[tuple, dict[str, int]]) -> dict[tuple, list[float | None]]:
    """Exact PERCENTILES of each measure per group: {(gid, queue, type, step, measure): values}.
    ``counts`` says how many values each group has, {(gid, queue, type, step): {measure: n}};
    only the rows at the ranks each group reads leave Spark (wanted_ranks)."""
    ranked = wanted_ranks(stack(rows)).collect()
    at = {(r["gid"], r["Queue"], r["Type"], r["Step"], r["m"], r["r"]): r["v"] for r in ranked}
    found: dict[tuple, list[float | None]] = {}
    for key, n in counts.items():
        for m in MEASURES:
            found[(*key, m)] = [_interpolate(n[m], p, lambda rank, m=m, key=key: at[(*key, m, rank)])
                                for p in PERCENTILES]
    return found


def stack(rows: Any) -> Any:
    """prepare()'s rows as one row per group level and measure with a value: (gid, Queue,
    Type, Step, m, v), a roll-up level's keys NULL."""
    from pyspark.sql import functions as F

    none = F.lit(None).cast("string")
    levels = F.array(*(F.struct(F.lit(gid).alias("gid"), (F.col("Queue") if gid < 7 else none).alias("Queue"),
                                (F.col("Type") if gid < 3 else none).alias("Type"),
                                (F.col("Step") if gid == 0 else none).alias("Step"))
                       for gid in LEVELS))
    measures = F.array(*(F.struct(F.lit(m).alias("m"), F.col(m).cast("double").alias("v")) for m in MEASURES))
    return (rows.select(F.explode(levels).alias("g"), *MEASURES)
            .select("g.*", F.explode(measures).alias("x"))
            .select("gid", "Queue", "Type", "Step", F.col("x.m").alias("m"), F.col("x.v").alias("v"))
            .where(F.col("v").isNotNull()))


def wanted_ranks(stacked: Any) -> Any:
    """The rows of ``stacked`` (gid, Queue, Type, Step, m, v) at the ranks their own group's
    PERCENTILES read, each with its rank r (from 0): at most 2 * len(PERCENTILES) per group
    and measure. Each group's count n and the ranks floor/ceil((n - 1) * p) are worked out in
    Spark (the same double arithmetic as _interpolate's), so that no rank of another group
    brings rows along. Window partitions put NULL keys together (Step NULL) and gid keeps a
    roll-up's NULLs apart from a first step's."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = ("gid", "Queue", "Type", "Step", "m")
    position = (F.col("n") - 1).cast("double")
    wanted = [F.col("r") == F.floor(position * F.lit(p)) for p in PERCENTILES]
    wanted += [F.col("r") == F.ceil(position * F.lit(p)) for p in PERCENTILES]
    return (stacked.select("*", F.count(F.lit(1)).over(Window.partitionBy(*keys)).alias("n"),
                           (F.row_number().over(Window.partitionBy(*keys).orderBy("v")) - 1).alias("r"))
            .where(reduce(lambda a, b: a | b, wanted))
            .drop("n"))


def _interpolate(count: int, p: float, value_at: Any) -> float | None:
    """The value at rank (count - 1) * p, between its two closest ranks (Spark's formula)."""
    if not count:
        return None
    position = (count - 1) * p
    lower, higher = math.floor(position), math.ceil(position)
    if lower == higher:
        return float(value_at(lower))
    return (higher - position) * value_at(lower) + (position - lower) * value_at(higher)


def _group(row: Any, found: dict[tuple, list[float | None]]) -> dict[str, Any]:
    level = LEVELS[row["gid"]]
    key = (row["gid"], row["Queue"], row["Type"], row["Step"])
    items = row["items"]
    statuses = {status: row[f"n_{status}"] for status in FINISHED}
    statuses["other"] = items - sum(statuses.values())
    return {
        "level": level,
        "queue": row["Queue"] if level != "all" else None,
        "type": row["Type"] if level in ("type", "step") else None,
        "step": row["Step"] if level == "step" else None,
        "items": items,
        "statuses": statuses,
        "retried": row["retried"],
        "retry_rate": row["retried"] / items,
        "failed": statuses["Failed"],
        "failure_rate": statuses["Failed"] / items,
        "wait_ms": _percentiles(row["wait_n"], found[(*key, "wait_ms")]),
        "duration_ms": _percentiles(row["duration_n"], found[(*key, "duration_ms")]),
    }


def _percentiles(count: int, values: list[float | None]) -> dict[str, Any]:
    return {"count": count, **{f"p{round(p * 100)}": v for p, v in zip(PERCENTILES, values, strict=True)}}


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

"""Synthetic archive rows in the archive layout (relq.pipeline.layout), for tests and bench/.

``generate(spark, rows, seed=...)`` builds the rows in Spark from ``spark.range`` with
column expressions only, so five million rows take seconds and never pass through Python.
Every random draw is a hash of (seed, draw, row id): the same seed gives the same rows
whatever the number of partitions or the Spark master.

What the rows look like (the finished items of a purge with @Archive = 1):

- queues and types: Notification/ResetPassword (30 %), SyncQueue/CustomerSync (45 %),
  SyncQueue/InventorySync (25 %); each type has its own step mix (Step NULL is a job's
  first step), status mix and duration scale;
- statuses: the finished states (Completed, Failed, Cancelled, Terminated,
  PartiallyCompleted); AttemptNum 0 only for items cancelled before any claim, otherwise
  1 to 3 (the default maxAttempts), a Failed item mostly on its last attempt;
- times (UTC, whole microseconds): EnqueuedAt unique and increasing over ``days`` days
  before ``end``, busier in the afternoon; 15 % scheduled for later; each attempt waits
  (log-normal, median 0.3 to 2.5 s by type, long tail; 0.5 % of first claims start a few
  microseconds before their key, which the database hands out ahead of the clock in a burst)
  and runs (log-normal per type and step); a retry is
  due after the database's backoff (1 s doubling, +-10 %). The row keeps the last attempt:
  ScheduledFor when it came due, StartedAt, Duration (ms) and UpdatedAt when it finished;
  an item cancelled while backing off keeps the ScheduledFor of the retry that never ran;
- Priority mostly 0 (10 % 5, 2 % 10), a GroupKey on 20 %, a DedupKey on 30 %;
- Error: a Failed item's one of four texts with numbers that vary by item (a tenth of them
  the lease expiry dbo.Next_SyncQueue_utx writes), a retried item's the error of the attempt
  before its retry, else empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

END = datetime(2024, 6, 3, tzinfo=timezone.utc)  # a fixed default: the same seed, the same rows
FINISHED = ("Completed", "Failed", "Cancelled", "Terminated", "PartiallyCompleted")
# dbo.Next_SyncQueue_utx's Error for an item whose worker vanished on its last attempt
LEASE_EXPIRED = "the lease of the last attempt expired"
_MASK53 = (1 << 53) - 1
_DRAWS = (1, 2, 3, 4, 5, 6, 7, 8, *range(14, 22), 31, 32, *range(40, 53))


@dataclass(frozen=True)
class Mix:
    """One job type: its share of the rows, and its steps, statuses and durations."""

    queue: str
    type: str
    share: float
    steps: tuple[tuple[str | None, float], ...]  # (step, share); None: the first step
    statuses: tuple[tuple[str, float], ...]  # (status, share), over FINISHED
    duration_ms: float  # median of an attempt's duration (log-normal)
    duration_sigma: float
    wait_ms: float  # median of an attempt's wait for a worker once due (log-normal, sigma 1.6)


MIXES = (
    Mix("Notification", "ResetPassword", 0.30, ((None, 1.0),),
        (("Completed", 0.935), ("Failed", 0.025), ("Cancelled", 0.03), ("Terminated", 0.005),
         ("PartiallyCompleted", 0.005)), 350.0, 0.8, 300.0),
    Mix("SyncQueue", "CustomerSync", 0.45, ((None, 0.5), ("Fetch", 0.3), ("Push", 0.2)),
        (("Completed", 0.90), ("Failed", 0.04), ("Cancelled", 0.03), ("Terminated", 0.01),
         ("PartiallyCompleted", 0.02)), 1200.0, 1.0, 800.0),
    Mix("SyncQueue", "InventorySync", 0.25, ((None, 0.7), ("Load", 0.3)),
        (("Completed", 0.86), ("Failed", 0.07), ("Cancelled", 0.04), ("Terminated", 0.01),
         ("PartiallyCompleted", 0.02)), 4000.0, 1.2, 2500.0),
)


def generate(spark: Any, rows: int, seed: int = 7, *, end: datetime = END, days: int = 7,
             mixes: tuple[Mix, ...] = MIXES, partitions: int | None = None) -> Any:
    """``rows`` archive rows: the layout's COMMON columns plus Queue and Type (no Day: layout.write
    adds it). Lazy: nothing runs until the frame is written or collected."""
    from pyspark.sql import functions as F

    if rows < 0 or days < 1 or not mixes:
        raise ValueError("generate needs rows >= 0, days >= 1 and at least one mix")

    def u(draw: int) -> Any:
        """A uniform draw in [0, 1), a function of (seed, draw, id) only (a column of its own,
        computed once: CASE branches would otherwise hash again in each branch)."""
        return F.col(f"_u{draw}")

    def normal(draw: int) -> Any:
        """A standard normal draw (Box-Muller on two uniforms)."""
        return (F.sqrt(-2.0 * F.log(1.0 - u(draw))) * F.cos(2.0 * math.pi * u(draw + 1)))

    def lognormal_ms(median: Any, sigma: Any, draw: int) -> Any:
        return median * F.exp(sigma * normal(draw))

    def pick(draw: int, choices: list[tuple[Any, float]]) -> Any:
        """One of ``choices`` (value, weight), by a uniform draw."""
        total = sum(weight for _, weight in choices)
        x, edge, expr = u(draw), 0.0, None
        for value, weight in choices[:-1]:
            edge += weight / total
            expr = (F.when(x < edge, F.lit(value)) if expr is None
                    else expr.when(x < edge, F.lit(value)))
        last = F.lit(choices[-1][0])
        return last if expr is None else expr.otherwise(last)

    span_us = days * 86_400_000_000
    start_us = int(end.timestamp() * 1_000_000) - span_us
    n = max(rows, 1)
    frame = spark.range(0, rows, 1, partitions) if partitions else spark.range(rows)
    frame = frame.select("id", *(
        (F.xxhash64(F.lit(seed), F.lit(draw), F.col("id")).bitwiseAND(F.lit(_MASK53)).cast("double")
         / float(1 << 53)).alias(f"_u{draw}") for draw in _DRAWS))

    # Which type: one draw picks the mix, and the mix's own columns follow from it.
    mix_index = pick(1, [(i, m.share) for i, m in enumerate(mixes)])
    frame = frame.withColumn("mix", mix_index)

    def per_mix(build: Any) -> Any:
        expr = None
        for i, m in enumerate(mixes):
            expr = (F.when(F.col("mix") == i, build(m)) if expr is None
                    else expr.when(F.col("mix") == i, build(m)))
        return expr

    # EnqueuedAt: evenly spaced keys (unique, increasing), then each day bent so that the
    # afternoon is busier: t -> t - a sin(2 pi (t - phase)) / 2 pi, monotone for a < 1.
    spacing = span_us / n
    fraction_of_span = (F.col("id") * spacing + u(2) * spacing * 0.5) / span_us
    day_pos = fraction_of_span * days
    day_index = F.floor(day_pos)
    within = day_pos - day_index
    bend, phase = 0.6, 14.0 / 24.0
    bent = (within - bend * (F.sin(2 * math.pi * (within - phase)) - math.sin(-2 * math.pi * phase))
            / (2 * math.pi))
    enqueued_us = F.lit(start_us) + ((day_index + bent) * 86_400_000_000).cast("long")

    status = per_mix(lambda m: pick(3, list(m.statuses)))
    step = per_mix(lambda m: pick(4, list(m.steps)))
    frame = frame.withColumn("Queue", per_mix(lambda m: F.lit(m.queue)))
    frame = frame.withColumn("Type", per_mix(lambda m: F.lit(m.type)))
    frame = frame.withColumn("Status", status).withColumn("Step", step)
    frame = frame.withColumn("enq_us", enqueued_us)

    # Attempts: cancelled items half the time before any claim; failed ones mostly on the last.
    attempts = (
        F.when((F.col("Status") == "Cancelled") & (u(5) < 0.5), F.lit(0))
        .when(F.col("Status") == "Failed", F.when(u(6) < 0.8, F.lit(3)).otherwise(F.lit(1)))
        # cancelled while backing off: an Error item still has attempts left
        .when(F.col("Status") == "Cancelled", F.when(u(6) < 0.7, F.lit(1)).otherwise(F.lit(2)))
        .otherwise(F.when(u(6) < 0.86, F.lit(1)).when(u(6) < 0.96, F.lit(2)).otherwise(F.lit(3)))
    )
    frame = frame.withColumn("AttemptNum", attempts.cast("int"))

    # Each mix's scales once, as columns: expressions repeated in CASE branches make whole-stage
    # code too big for the JIT (HotSpot skips methods over 8,000 bytes), and then 5x slower.
    frame = frame.select(
        "*",
        per_mix(lambda m: F.lit(m.wait_ms)).alias("wait_med"),
        (per_mix(lambda m: F.lit(m.duration_ms))
         * F.when(F.col("Step").isNull(), 1.0).when(F.col("Step") == "Push", 1.8).otherwise(0.6))
        .alias("dur_med"),
        per_mix(lambda m: F.lit(m.duration_sigma)).alias("dur_sigma"),
    )
    wait_median, wait_sigma = F.col("wait_med"), F.lit(1.6)
    duration_median, duration_sigma = F.col("dur_med"), F.col("dur_sigma")
    frame = frame.select(
        "*",
        *(lognormal_ms(wait_median, wait_sigma, 10 + 4 * k).alias(f"wait{k}") for k in (1, 2)),
        *(lognormal_ms(duration_median, duration_sigma, 12 + 4 * k).alias(f"run{k}") for k in (1, 2)),
        lognormal_ms(wait_median, wait_sigma, 40).alias("wait_last"),
        lognormal_ms(duration_median, duration_sigma, 42).alias("run_last"),
    ).drop(*(f"_u{d}" for d in (1, 3, 4, 5, 6, *range(14, 22), 40, 41, 42, 43)),
           "wait_med", "dur_med", "dur_sigma", "mix")

    # Due time of the first attempt: now, or 15 % scheduled up to hours ahead (exponential).
    first_due = F.col("enq_us") + F.when(
        u(7) < 0.15, (-F.log(1.0 - u(8)) * 600_000_000).cast("long")).otherwise(F.lit(0))
    # Earlier attempts (all ended in Error): each waited, ran, then backed off 1 s * 2^(k-1) +-10 %.
    earlier = [F.when(F.col("AttemptNum") > k, (
        (F.col(f"wait{k}") + F.col(f"run{k}") + 1000.0 * (2 ** (k - 1)) * (0.9 + 0.2 * u(30 + k))) * 1000
    ).cast("long")).otherwise(F.lit(0)) for k in (1, 2)]
    frame = frame.withColumn("due_us", first_due + earlier[0] + earlier[1])

    # 0.5 % of first claims come a few microseconds "before" their key: keys are handed out
    # ahead of the clock in a burst of enqueues, and a waiting worker claims at once.
    ahead = (F.col("AttemptNum") == 1) & (F.col("due_us") == F.col("enq_us")) & (u(47) < 0.005)
    last_wait_us = F.when(ahead, -(F.floor(u(48) * 50) + 1).cast("long")).otherwise(
        (F.col("wait_last") * 1000).cast("long"))
    last_run_ms = F.greatest(F.lit(1.0), F.col("run_last")).cast("long")
    report_us = (u(44) * 5000).cast("long")  # the report's own latency after the handler
    started = F.col("due_us") + last_wait_us
    cancelled_later = (-F.log(1.0 - u(45)) * 300_000_000).cast("long")

    never_ran = F.col("AttemptNum") == 0
    in_backoff = (F.col("Status") == "Cancelled") & ~never_ran  # cancelled while in Error
    frame = (frame
             .withColumn("start_us", F.when(never_ran, F.lit(None).cast("long")).otherwise(started))
             .withColumn("dur_ms", F.when(never_ran, F.lit(None).cast("long")).otherwise(last_run_ms)))
    retry_backoff = (1000.0 * F.pow(F.lit(2.0), F.col("AttemptNum") - 1) * (0.9 + 0.2 * u(46)) * 1000)
    finished_us = (
        F.when(never_ran, F.col("due_us") + cancelled_later)
        .when(in_backoff, F.col("start_us") + F.col("dur_ms") * 1000 + cancelled_later)
        .otherwise(F.col("start_us") + F.col("dur_ms") * 1000 + report_us)
    )
    scheduled_us = F.when(in_backoff, F.col("start_us") + F.col("dur_ms") * 1000
                          + retry_backoff.cast("long")).otherwise(F.col("due_us"))

    def ts(us: Any) -> Any:
        return F.timestamp_micros(us)

    priority = F.when(u(50) < 0.02, F.lit(10)).when(u(50) < 0.12, F.lit(5)).otherwise(F.lit(0))
    group = F.when(u(51) < 0.2, F.concat(F.lit("customer-"), (F.col("id") % 997).cast("string")))
    dedup = F.when(u(52) < 0.3, F.concat(F.lit("dedup-"), F.col("id").cast("string")))
    number = (F.col("id") % 9973).cast("string")  # varies by item, as ids and times in real errors do
    timeout = F.concat(F.lit("timeout after 30 s talking to the remote system (request "), number, F.lit(")"))
    unavailable = F.concat(F.lit("HTTP 503 from the remote system after "), number, F.lit(" ms"))
    vanished = F.concat(F.lit(LEASE_EXPIRED + ": its worker, worker-"), (F.col("id") % 7).cast("string"),
                        F.lit(", vanished"))
    failed = (F.when(u(49) < 0.45, timeout).when(u(49) < 0.75, unavailable)
              .when(u(49) < 0.9, F.lit("the remote system rejected the item: unknown account"))
              .otherwise(vanished))
    retried = (F.when(u(49) < 0.6, F.concat(F.lit("HTTP 429 too many requests, retry after "),
                                            (F.col("id") % 60).cast("string"), F.lit(" s")))
               .otherwise(F.lit("connection reset by peer")))
    error = (F.when(F.col("Status") == "Failed", failed)
             .when(F.col("AttemptNum") > 1, retried)
             .otherwise(F.lit("")))
    frame = frame.withColumn("fin_us", finished_us)
    updated = ts(F.col("fin_us"))
    return frame.select(
        ts(F.col("enq_us")).alias("EnqueuedAt"),
        F.col("Status"),
        F.col("Step"),
        F.col("AttemptNum"),
        ts(scheduled_us).alias("ScheduledFor"),
        ts(F.col("start_us")).alias("StartedAt"),
        updated.alias("UpdatedAt"),
        F.col("dur_ms").alias("Duration"),
        priority.cast("int").alias("Priority"),
        group.alias("GroupKey"),
        dedup.alias("DedupKey"),
        error.alias("Error"),
        (updated + F.expr("INTERVAL 1 HOUR")).alias("ArchivedAt"),
        F.col("Queue"),
        F.col("Type"),
    )

"""One arm of a scenario: N worker processes claim and complete (or receive) for a fixed
time while a feeder keeps the backlog at its size, and now and then a purge runs.

Each worker is a process of its own (multiprocessing, spawned) with its own pyodbc
connection through relq.db, so that neither the GIL nor a shared connection limits
what the server is asked to do. Every call is timed client-side (time.perf_counter
around the procedure call). A cycle is one claim and one report of what it claimed:
- SyncQueue, batch 1: dbo.Next_SyncQueue_trx, then dbo.Modify_SyncQueue_trx Completed;
- SyncQueue, batch n: dbo.Next_SyncQueue_Batch_trx, then one dbo.Modify_SyncQueue_Batch_trx;
- a message queue: dbo.Receive_<Kind>_trx (the receive deletes: there is no report).
Claims do not wait (@WaitMs = 0): an empty claim is counted, not timed. A deadlock
victim (1205) is counted and its call repeated.

The feeder (a thread of the parent, with its own connection) writes as many new items
as the workers took, set-based, in statements of at most bench.backlog.FEED_CHUNK
rows, so the backlog stays near its size however fast the workers go: a run at a
backlog of 1,000 measures claims at 1,000, not at a queue running dry.
"""

from __future__ import annotations

import json
import multiprocessing
import queue as queues
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench import backlog, counters
from bench.stats import Latency, latency, rate
from relq import db
from relq.errors import RelqError

QUERY_TIMEOUT_S = 120  # a call blocked this long fails its worker instead of hanging the run
START_TIMEOUT_S = 120  # for every worker process to start and connect
FINISH_MARGIN_S = 300  # after an arm's seconds, for the last calls to end
DEADLOCK = 1205
RETRIES = 5
PURGE_OLDER_THAN_MINUTES = 1440  # the purge fixture finished days ago; what an arm completes stays

BATCH_REPORT = """
SET NOCOUNT ON;
DECLARE @Outcomes dbo.SyncQueueOutcomeList;
INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status], Response)
SELECT j.EnqueuedAt, j.UpdatedAt, 'Completed', N'bench'
FROM OPENJSON(?) WITH (EnqueuedAt DATETIME2(7), UpdatedAt DATETIME2(7)) AS j;
EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
"""
PROCESSING = "SELECT COUNT_BIG(*) FROM dbo.SyncQueue WHERE [Status] = 'Processing';"
COMPLETED_SINCE = "SELECT COUNT_BIG(*) FROM dbo.SyncQueue WHERE [Status] = 'Completed' AND UpdatedAt >= ?;"


@dataclass(frozen=True)
class Arm:
    """What one measurement runs."""

    label: str  # e.g. "8 workers"
    queue: str  # SyncQueue, or a message queue (HeapQueue, FifoQueue, LifoStack, PendingQueue)
    workers: int
    batch: int = 1
    backlog: int = 10_000  # due items, kept at this level by the feeder
    purge: bool = False  # a purge of finished items runs throughout
    seconds: float = 10.0

    @property
    def relational(self) -> bool:
        return self.queue == "SyncQueue"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "queue": self.queue, "workers": self.workers, "batch": self.batch,
                "backlog": self.backlog, "purge": self.purge, "seconds": self.seconds}


@dataclass
class ArmResult:
    arm: Arm
    elapsed: float  # seconds, the slowest worker's
    items: int  # completed (relational) or received
    claims: int  # claims that returned items
    empty_claims: int
    claim_ms: Latency | None
    report_ms: Latency | None
    deadlock_retries: int  # deadlock victims among the workers' calls
    counters: counters.Snapshot  # server-wide, during the arm
    fed: int  # items the feeder wrote during the arm
    processing_left: int | None = None  # SyncQueue items still Processing afterwards
    completed_in_db: int | None = None  # SyncQueue items Completed during the arm
    purged: int | None = None
    purge_ran_dry_s: float | None = None  # when the purge found nothing left, if it did
    problems: list[str] = field(default_factory=list)

    @property
    def items_per_s(self) -> float:
        return rate(self.items, self.elapsed) if self.elapsed > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.arm.as_dict(), "elapsed_s": round(self.elapsed, 3), "items": self.items,
            "items_per_s": round(self.items_per_s, 1), "claims": self.claims,
            "empty_claims": self.empty_claims,
            "claim_ms": self.claim_ms.as_dict() if self.claim_ms else None,
            "report_ms": self.report_ms.as_dict() if self.report_ms else None,
            "deadlock_retries": self.deadlock_retries, "lock_waits": self.counters.lock_waits,
            "deadlocks": self.counters.deadlocks, "fed": self.fed, "processing_left": self.processing_left,
            "completed_in_db": self.completed_in_db, "purged": self.purged,
            "purge_ran_dry_s": self.purge_ran_dry_s, "problems": self.problems,
        }


# -- the worker process --------------------------------------------------------------------------------------


class _Retrying:
    """Calls that repeat after a deadlock, counting them."""

    def __init__(self) -> None:
        self.deadlocks = 0

    def __call__(self, call: Callable[[], Any]) -> Any:
        for attempt in range(RETRIES):
            try:
                return call()
            except db.SqlError as exc:
                if exc.number != DEADLOCK or attempt == RETRIES - 1:
                    raise
                self.deadlocks += 1
        raise AssertionError("unreachable")


def _checked(result: db.CallResult, procedure: str) -> list[tuple]:
    if result.return_code != 0:
        raise RelqError(f"{procedure} returned {result.return_code}")
    return result.result_sets[0] if result.result_sets else []


Claim = Callable[[], list[tuple]]
Report = Callable[[list[tuple]], None]


def cycle(conn: Any, arm: Arm, name: str) -> tuple[Claim, Report | None]:
    """The claim and the report of one worker (None: a message queue's receive is all)."""
    if not arm.relational:
        procedure = f"dbo.Receive_{arm.queue}_trx"
        return (lambda: _checked(db.call(conn, procedure, BatchSize=arm.batch), procedure)), None
    if arm.batch == 1:
        def claim() -> list[tuple]:
            return _checked(db.call(conn, "dbo.Next_SyncQueue_trx", LockedBy=name, WaitMs=0),
                            "dbo.Next_SyncQueue_trx")

        def report(rows: list[tuple]) -> None:
            for key, token, *_ in rows:
                _checked(db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token,
                                 Status="Completed", Response="bench"), "dbo.Modify_SyncQueue_trx")
        return claim, report

    def claim_batch() -> list[tuple]:
        return _checked(db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=name, BatchSize=arm.batch,
                                WaitMs=0), "dbo.Next_SyncQueue_Batch_trx")

    cursor = conn.cursor()

    def report_batch(rows: list[tuple]) -> None:
        outcomes = json.dumps([{"EnqueuedAt": db.sql_value(key), "UpdatedAt": db.sql_value(token)}
                               for key, token, *_ in rows])
        done = db.query(cursor, BATCH_REPORT, outcomes)
        if len(done) != len(rows) or any(status != "Completed" for _, _, status, _ in done):
            raise RelqError(f"dbo.Modify_SyncQueue_Batch_trx completed {len(done)} of {len(rows)} items")
    return claim_batch, report_batch


def work(conn_str: str, arm: Arm, slot: int, barrier: Any, taken: Any, results: Any) -> None:
    """A worker process: connect, wait for the others, then cycle for ``arm.seconds``.
    Puts one dict on ``results``: its counts and call durations, or its error."""
    out: dict[str, Any] = {"slot": slot}
    try:
        conn = db.connect(conn_str)
        conn.timeout = QUERY_TIMEOUT_S
        claim, report = cycle(conn, arm, f"bench/{slot}")
        retrying = _Retrying()
        claim_s: list[float] = []
        report_s: list[float] = []
        items = empty = 0
        barrier.wait(START_TIMEOUT_S)
        start = time.perf_counter()
        end = start + arm.seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            rows = retrying(claim)
            took = time.perf_counter() - t0
            if not rows:
                empty += 1
                time.sleep(0.001)
                continue
            claim_s.append(took)
            with taken.get_lock():
                taken.value += len(rows)
            if report is not None:
                t0 = time.perf_counter()
                retrying(lambda rows=rows: report(rows))
                report_s.append(time.perf_counter() - t0)
            items += len(rows)
        out.update(elapsed=time.perf_counter() - start, items=items, empty=empty, claim_s=claim_s,
                   report_s=report_s, deadlocks=retrying.deadlocks)
        conn.close()
    except threading.BrokenBarrierError:
        out["error"] = "another worker failed to start"
    except Exception as exc:  # the parent reports it, with the other workers' results
        out["error"] = f"{type(exc).__name__}: {exc}"
        barrier.abort()
    results.put(out)


# -- the parent's helpers: the feeder and the purge ----------------------------------------------------------


class _Helper(threading.Thread):
    """A thread of the parent with its own connection, started before the workers and
    running from ``go`` until ``stop``."""

    def __init__(self, conn_str: str, go: threading.Event, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.conn_str, self.go, self.stop = conn_str, go, stop
        self.error: str | None = None

    def run(self) -> None:
        try:
            conn = db.connect(self.conn_str)
            conn.timeout = QUERY_TIMEOUT_S
            try:
                self.go.wait()
                self.loop(conn)
            finally:
                conn.close()
        except Exception as exc:
            self.error = f"{type(self).__name__.lower()}: {type(exc).__name__}: {exc}"

    def loop(self, conn: Any) -> None:
        raise NotImplementedError


class Feeder(_Helper):
    """Writes as many new items as the workers have taken."""

    def __init__(self, conn_str: str, queue: str, taken: Any, go: threading.Event,
                 stop: threading.Event) -> None:
        super().__init__(conn_str, go, stop)
        self.sql = backlog.queue_sql(queue)
        self.taken = taken
        self.fed = 0

    def loop(self, conn: Any) -> None:
        cursor = conn.cursor()
        while not self.stop.is_set():
            deficit = self.taken.value - self.fed
            if deficit <= 0:
                self.stop.wait(0.005)
                continue
            count = min(deficit, backlog.FEED_CHUNK)
            db.query(cursor, self.sql, count)
            self.fed += count


class Purger(_Helper):
    """Purges finished SyncQueue items, one transaction a call, until none is left or the arm ends."""

    def __init__(self, conn_str: str, go: threading.Event, stop: threading.Event) -> None:
        super().__init__(conn_str, go, stop)
        self.removed = 0
        self.ran_dry_s: float | None = None

    def loop(self, conn: Any) -> None:
        start = time.perf_counter()
        retrying = _Retrying()  # the purge is the deadlock victim of choice (DEADLOCK_PRIORITY LOW)
        while not self.stop.is_set():
            rows = retrying(lambda: _checked(db.call(
                conn, "dbo.Purge_SyncQueue_trx", OlderThanMinutes=PURGE_OLDER_THAN_MINUTES, BatchSize=1000,
                MaxBatches=1), "dbo.Purge_SyncQueue_trx"))
            removed = int(rows[0][0])
            self.removed += removed
            if removed == 0:
                self.ran_dry_s = time.perf_counter() - start
                return


# -- one arm -------------------------------------------------------------------------------------------------


def run_arm(conn_str: str, arm: Arm, tick: Callable[[float], None] | None = None) -> ArmResult:
    """Run ``arm`` against the database ``conn_str`` names, whose backlog is already at
    ``arm.backlog``. ``tick`` gets the share of the arm's time gone by, now and then."""
    ctx = multiprocessing.get_context("spawn")  # no pyodbc state inherited from the parent
    barrier = ctx.Barrier(arm.workers + 1)
    taken = ctx.Value("q", 0)
    results = ctx.Queue()
    go, stop = threading.Event(), threading.Event()
    feeder = Feeder(conn_str, arm.queue, taken, go, stop)
    purger = Purger(conn_str, go, stop) if arm.purge else None
    helpers = [h for h in (feeder, purger) if h is not None]
    processes = [ctx.Process(target=work, args=(conn_str, arm, slot, barrier, taken, results), daemon=True)
                 for slot in range(arm.workers)]
    monitor = db.connect(conn_str)
    try:
        cursor = monitor.cursor()
        since: datetime = db.query(cursor, "SELECT SYSUTCDATETIME();")[0][0]
        for helper in helpers:
            helper.start()
        for process in processes:
            process.start()
        before = counters.snapshot(monitor)
        with suppress(threading.BrokenBarrierError):  # the workers say why
            barrier.wait(START_TIMEOUT_S)
        go.set()
        outs = _collect(results, processes, arm, tick)
        stop.set()
        for helper in helpers:
            helper.join(QUERY_TIMEOUT_S)
        after = counters.snapshot(monitor)
        result = _result(arm, outs, counters.delta(before, after), feeder)
        if purger is not None:
            result.purged, result.purge_ran_dry_s = purger.removed, purger.ran_dry_s
        result.problems += [h.error for h in helpers if h.error]
        if arm.relational:
            _verify(cursor, result, since)
        return result
    finally:
        stop.set()
        go.set()
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
        monitor.close()


def _collect(results: Any, processes: list[Any], arm: Arm,
             tick: Callable[[float], None] | None) -> list[dict]:
    """Every worker's dict, or a RelqError naming the ones that failed."""
    outs: list[dict] = []
    started = time.monotonic()
    deadline = started + START_TIMEOUT_S + arm.seconds + FINISH_MARGIN_S
    while len(outs) < len(processes):
        if tick is not None:
            tick(min(1.0, (time.monotonic() - started) / arm.seconds))
        try:
            outs.append(results.get(timeout=0.2))
            continue
        except queues.Empty:
            pass
        dead = [p for p in processes if p.exitcode not in (None, 0)]
        if dead or time.monotonic() > deadline:
            why = f"{len(dead)} worker process(es) died" if dead else "the workers did not finish in time"
            raise RelqError(f"{arm.label}: {why}")
    errors = sorted({o["error"] for o in outs if "error" in o})
    if errors:
        raise RelqError(f"{arm.label}: " + "; ".join(errors))
    return outs


def _result(arm: Arm, outs: list[dict], during: counters.Snapshot, feeder: Feeder) -> ArmResult:
    claim_s = [s for o in outs for s in o["claim_s"]]
    report_s = [s for o in outs for s in o["report_s"]]
    return ArmResult(
        arm=arm, elapsed=max(o["elapsed"] for o in outs), items=sum(o["items"] for o in outs),
        claims=len(claim_s), empty_claims=sum(o["empty"] for o in outs), claim_ms=latency(claim_s),
        report_ms=latency(report_s), deadlock_retries=sum(o["deadlocks"] for o in outs), counters=during,
        fed=feeder.fed)


def _verify(cursor: Any, result: ArmResult, since: datetime) -> None:
    """Every item claimed was completed: nothing left in Processing, and as many items
    completed in the table as the workers reported."""
    result.processing_left = int(db.query(cursor, PROCESSING)[0][0])
    result.completed_in_db = int(db.query(cursor, COMPLETED_SINCE, since)[0][0])
    if result.processing_left:
        result.problems.append(f"{result.processing_left} item(s) left in Processing")
    if result.completed_in_db != result.items:
        result.problems.append(f"the workers completed {result.items} items, the table shows "
                               f"{result.completed_in_db} completed")

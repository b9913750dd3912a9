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

Before the arm, each worker cycles untimed for ``Arm.warmup`` seconds (compiling the
procedures, warming the caches and the connection), then waits at a barrier with the
others and the parent; the timed arm starts when all have arrived. The DMV counters
are read right after the barrier and right after the last worker's result.

The feeder (a thread of the parent, with its own connection) writes as many new items
as the workers took, warm-up included, set-based, in statements of at most
bench.backlog.FEED_CHUNK rows, so the backlog stays near its size however fast the
workers go: a run at a backlog of 1,000 measures claims at 1,000, not at a queue
running dry.
"""

from __future__ import annotations

import json
import multiprocessing
import queue as queues
import signal
import threading
import time
from collections.abc import Callable, Sequence
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
WARMUP_S = 1.0  # untimed cycles of each worker before the barrier
STOP_GRACE_S = 5.0  # for a worker that sent its result to exit, before it is terminated


def batch_report_sql(queue: str) -> str:
    """The batch that reports the items of a JSON array [{EnqueuedAt, UpdatedAt}] Completed in
    one dbo.Modify_<Queue>_Batch_trx (every relational queue has it, and dbo.<Queue>OutcomeList)."""
    if not queue.isidentifier():
        raise ValueError(f"not a queue name: {queue!r}")
    return f"""
SET NOCOUNT ON;
DECLARE @Outcomes dbo.{queue}OutcomeList;
INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status], Response)
SELECT j.EnqueuedAt, j.UpdatedAt, 'Completed', N'bench'
FROM OPENJSON(CAST(? AS NVARCHAR(MAX))) WITH (EnqueuedAt DATETIME2(7), UpdatedAt DATETIME2(7)) AS j;
EXEC dbo.Modify_{queue}_Batch_trx @Outcomes = @Outcomes;
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
    warmup: float = WARMUP_S  # untimed seconds of cycles before the barrier

    @property
    def relational(self) -> bool:
        return self.queue == "SyncQueue"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "queue": self.queue, "workers": self.workers, "batch": self.batch,
                "backlog": self.backlog, "purge": self.purge, "seconds": self.seconds,
                "warmup_s": self.warmup}


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
    fed: int  # items the feeder wrote during the warm-up and the arm
    warmup_items: int = 0  # completed (or received) in the untimed warm-up
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
            "deadlocks": self.counters.deadlocks, "fed": self.fed,
            "warmup_items": self.warmup_items, "processing_left": self.processing_left,
            "completed_in_db": self.completed_in_db, "purged": self.purged,
            "purge_ran_dry_s": self.purge_ran_dry_s, "problems": self.problems,
        }

    @property
    def purge_ran_dry_early(self) -> bool:
        """The purge found nothing left before the arm's time was up: the arm ran partly without it."""
        return self.purge_ran_dry_s is not None and self.purge_ran_dry_s < self.arm.seconds


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


def checked(result: db.CallResult, procedure: str) -> list[tuple]:
    """The first result set of a call that returned 0; RelqError naming the procedure otherwise."""
    if result.return_code != 0:
        raise RelqError(f"{procedure} returned {result.return_code}")
    return result.result_sets[0] if result.result_sets else []


Claim = Callable[[], list[tuple]]
Report = Callable[[list[tuple]], None]


def cycle(conn: Any, arm: Arm, name: str) -> tuple[Claim, Report | None]:
    """The claim and the report of one worker (None: a message queue's receive is all)."""
    if not arm.relational:
        procedure = f"dbo.Receive_{arm.queue}_trx"
        return (lambda: checked(db.call(conn, procedure, BatchSize=arm.batch), procedure)), None
    if arm.batch == 1:
        def claim() -> list[tuple]:
            return checked(db.call(conn, "dbo.Next_SyncQueue_trx", LockedBy=name, WaitMs=0),
                            "dbo.Next_SyncQueue_trx")

        def report(rows: list[tuple]) -> None:
            for key, token, *_ in rows:
                checked(db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token,
                                 Status="Completed", Response="bench"), "dbo.Modify_SyncQueue_trx")
        return claim, report

    def claim_batch() -> list[tuple]:
        return checked(db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=name, BatchSize=arm.batch,
                                WaitMs=0), "dbo.Next_SyncQueue_Batch_trx")

    cursor = conn.cursor()
    return claim_batch, lambda rows: complete(cursor, "SyncQueue", rows)


def complete(cursor: Any, queue: str, rows: Sequence[tuple]) -> None:
    """Report the claimed items ``rows`` (EnqueuedAt, UpdatedAt, ...) Completed, in one
    dbo.Modify_<Queue>_Batch_trx; RelqError unless every one of them was."""
    if not rows:
        return
    outcomes = json.dumps([{"EnqueuedAt": db.sql_value(key), "UpdatedAt": db.sql_value(token)}
                           for key, token, *_ in rows])
    done = db.query(cursor, batch_report_sql(queue), outcomes)
    if len(done) != len(rows) or any(row[2] != "Completed" for row in done):
        raise RelqError(f"dbo.Modify_{queue}_Batch_trx completed {len(done)} of {len(rows)} items")


@dataclass
class _Cycles:
    """What a run of cycles did."""

    elapsed: float = 0.0
    items: int = 0
    empty: int = 0
    claim_s: list[float] = field(default_factory=list)
    report_s: list[float] = field(default_factory=list)


def _cycles(claim: Claim, report: Report | None, retrying: _Retrying, taken: Any, seconds: float) -> _Cycles:
    """Claim and report for ``seconds``; every claimed item counts in ``taken`` (for the feeder)."""
    done = _Cycles()
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        rows = retrying(claim)
        took = time.perf_counter() - t0
        if not rows:
            done.empty += 1
            time.sleep(0.001)
            continue
        done.claim_s.append(took)
        with taken.get_lock():
            taken.value += len(rows)
        if report is not None:
            t0 = time.perf_counter()
            retrying(lambda rows=rows: report(rows))
            done.report_s.append(time.perf_counter() - t0)
        done.items += len(rows)
    done.elapsed = time.perf_counter() - start
    return done


def work(conn_str: str, arm: Arm, slot: int, barrier: Any, taken: Any, results: Any) -> None:
    """A worker process: connect, warm up (untimed), wait for the others, then cycle for
    ``arm.seconds``. Puts one dict on ``results``: its counts and call durations, or its error."""
    out: dict[str, Any] = {"slot": slot}
    try:
        conn = db.connect(conn_str)
        conn.timeout = QUERY_TIMEOUT_S
        claim, report = cycle(conn, arm, f"bench/{slot}")
        warm = _cycles(claim, report, _Retrying(), taken, arm.warmup)
        retrying = _Retrying()  # only the timed arm's deadlocks count
        barrier.wait(START_TIMEOUT_S)
        timed = _cycles(claim, report, retrying, taken, arm.seconds)
        out.update(elapsed=timed.elapsed, items=timed.items, empty=timed.empty, claim_s=timed.claim_s,
                   report_s=timed.report_s, deadlocks=retrying.deadlocks, warmup_items=warm.items)
        conn.close()
    except threading.BrokenBarrierError:
        out["error"] = "another worker failed to start"
    except Exception as exc:  # the parent reports it, with the other workers' results
        out["error"] = f"{type(exc).__name__}: {exc}"
        barrier.abort()
    results.put(out)


def worker_main(conn_str: str, arm: Arm, slot: int, barrier: Any, taken: Any, results: Any) -> None:
    """The worker process's entry: Ctrl-C goes to the whole process group, and the parent
    alone answers it (it terminates the workers), so a worker ignores SIGINT instead of
    printing a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    work(conn_str, arm, slot, barrier, taken, results)


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
            rows = retrying(lambda: checked(db.call(
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
    feeding, go, stop = threading.Event(), threading.Event(), threading.Event()
    feeding.set()  # the feeder refills what the warm-ups take too
    feeder = Feeder(conn_str, arm.queue, taken, feeding, stop)
    purger = Purger(conn_str, go, stop) if arm.purge else None
    helpers: list[_Helper] = [h for h in (feeder, purger) if h is not None]
    processes = [ctx.Process(target=worker_main, args=(conn_str, arm, slot, barrier, taken, results),
                             daemon=True)
                 for slot in range(arm.workers)]
    monitor = db.connect(conn_str)
    finished = False
    try:
        cursor = monitor.cursor()
        since: datetime = db.query(cursor, "SELECT SYSUTCDATETIME();")[0][0]
        for helper in helpers:
            helper.start()
        for process in processes:
            process.start()
        why = wait_at_barrier(barrier, processes, START_TIMEOUT_S)
        before = counters.snapshot(monitor)
        go.set()
        outs = _collect(results, processes, arm, tick)
        after = counters.snapshot(monitor)
        if why is not None:  # the workers' own errors, when they sent some, came first
            raise RelqError(f"{arm.label}: {why}")
        stop.set()
        _join(helpers)
        result = _result(arm, outs, counters.delta(before, after), feeder)
        if purger is not None:
            result.purged, result.purge_ran_dry_s = purger.removed, purger.ran_dry_s
        result.problems += [h.error for h in helpers if h.error]
        if arm.relational:
            _verify(cursor, result, since)
        finished = True
        return result
    finally:
        stop.set()
        go.set()
        stop_processes(processes, STOP_GRACE_S if finished else 0.0)
        _join(helpers)
        monitor.close()


def wait_at_barrier(barrier: Any, processes: Sequence[Any], timeout: float) -> str | None:
    """Wait at ``barrier`` with the worker processes; None when all arrived, else why not.
    A process that exits before the start (it died before reaching its work, or failed
    and left) aborts the barrier at once, instead of leaving the others to wait ``timeout``."""
    passed = threading.Event()
    gone: list[int] = []

    def watch() -> None:
        while not passed.wait(0.1):
            exited = [p for p in processes if p.exitcode is not None]
            if exited:
                gone.append(len(exited))
                barrier.abort()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        barrier.wait(timeout)
        return None
    except threading.BrokenBarrierError:
        if gone:
            return f"{gone[0]} worker process(es) exited before the start"
        return f"the workers did not all start within {timeout:.0f} s"
    finally:
        passed.set()
        watcher.join()


def stop_processes(processes: Sequence[Any], grace: float) -> None:
    """Wait up to ``grace`` seconds for the started processes to exit, then terminate and
    join the ones left."""
    started = [p for p in processes if p.pid is not None]
    deadline = time.monotonic() + grace
    for process in started:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in started:
        if process.is_alive():
            process.terminate()
            process.join(STOP_GRACE_S)


def _join(helpers: Sequence[threading.Thread]) -> None:
    for helper in helpers:
        if helper.ident is not None:  # started
            helper.join(QUERY_TIMEOUT_S)


def _collect(results: Any, processes: Sequence[Any], arm: Arm,
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
    """The arm's figures from the workers' dicts: items over the slowest worker's time."""
    claim_s = [s for o in outs for s in o["claim_s"]]
    report_s = [s for o in outs for s in o["report_s"]]
    result = ArmResult(
        arm=arm, elapsed=max(o["elapsed"] for o in outs), items=sum(o["items"] for o in outs),
        claims=len(claim_s), empty_claims=sum(o["empty"] for o in outs), claim_ms=latency(claim_s),
        report_ms=latency(report_s), deadlock_retries=sum(o["deadlocks"] for o in outs), counters=during,
        fed=feeder.fed, warmup_items=sum(o.get("warmup_items", 0) for o in outs))
    if result.items == 0:
        done = "completed" if arm.relational else "received"
        result.problems.append(f"no item was {done} during the arm: it measured nothing")
    return result


def _verify(cursor: Any, result: ArmResult, since: datetime) -> None:
    """Every item claimed was completed: nothing left in Processing, and as many items
    completed in the table since ``since`` as the workers reported, warm-up included."""
    result.processing_left = int(db.query(cursor, PROCESSING)[0][0])
    result.completed_in_db = int(db.query(cursor, COMPLETED_SINCE, since)[0][0])
    if result.processing_left:
        result.problems.append(f"{result.processing_left} item(s) left in Processing")
    reported = result.items + result.warmup_items
    if result.completed_in_db != reported:
        result.problems.append(f"the workers completed {reported} items ({result.items} in the arm, "
                               f"{result.warmup_items} in the warm-up), the table shows "
                               f"{result.completed_in_db} completed")

"""Cost as the tables grow: what one claim, one health read and one /metrics scrape
cost with a million items in the table against a thousand, and the arithmetic and
bounds of the idle scenario (bench.idle).

Logical reads and CPU are the server's counters for one session, read from another
connection before and after the calls measured: sys.dm_exec_sessions.logical_reads
("logical reads that have been performed on the session") and cpu_time (ms), cumulative
for the session's life
(https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-sessions-transact-sql).
The measured session runs nothing but the calls measured (completing what a claim took
and refilling the due items run on another connection), so the delta is theirs: nested
procedures, functions, views and ad hoc SQL alike, each read counted once. (The
per-procedure counters of sys.dm_exec_procedure_stats cover procedures only, not the
health views' ad hoc SELECTs, and their documentation does not say whether an outer
procedure's reads include those of the procedures it calls.) A session whose
login_time changed (it reconnected) or whose counters went down between two reads was
reset: the measure fails instead of reporting a difference of two unrelated counts.
Reading another session's row needs VIEW SERVER STATE, as the rest of the bench.

Each measure runs WARM_CALLS calls first (compiling the plan on the statistics just
updated: a compilation's reads are not the call's), then COST_CALLS calls, and reports
their mean. The bound is on the ratio of the means with the large table over the small
one, both in the same run: at most CLAIM_BOUND and HEALTH_BOUND.

claimcost. The items "in the way" (IN_THE_WAY_SQL), none of which a claim of the
claimed type may take: per 20, 2 exhausted (Error at the attempt limit, due, of the
claimed type), 9 not yet due (Pending, due tomorrow, of the claimed type) and 9 of
another type (due tomorrow; with one type only, not due either), all at Priority 1,
above the due items' 0, so that a claim reading in priority order meets them first.
DUE_ITEMS due items of the claimed type (Pending, Priority 0) are present in both arms:
what each measured call claims is completed and as many new due items are written
(on another connection) before the next call.
An exhausted item a claim meets becomes Failed in that claim, so they are in the way
once: the arm's steady state is measured after a warm-up of claims that runs until no
exhausted item is left in the claim index (each claim fails up to its @Want, batch +
16, of them). That warm-up is itself checked: it must end within twice the claims that
the exhausted items need, plus WARM_CALLS + 10, or the exhausted items are being read
by every claim instead of failed, and the arm fails. The claims measured: what the
worker calls, dbo.Next_<Queue>_Batch_trx, at --batch: for SyncQueue with @Type set (the
claimed type) and with @Type NULL, and for Notification.

healthcost. Finished items (bench.backlog.FINISHED_SYNC_QUEUE: Completed a day ago
or more, with their attempt rows, older than QueueThroughput_V's window) and
DUE_ITEMS Pending ones; the readers measured are those of relq itself: SELECT * of
dbo.QueueHealth_V and of dbo.QueueThroughput_V, and what /metrics runs (relq's
dashboard store, relq.dashboard.store.SqlStore.health, and its exposition,
relq.dashboard.metrics.exposition), imported, not copied.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from rich.table import Table
from rich.text import Text

from bench import backlog
from bench.stats import Ratio, ratio
from bench.workers import checked, complete
from relq import db
from relq.errors import RelqError

CLAIM_BOUND = 1.5  # claim logical reads per call, large over small
HEALTH_BOUND = 1.5  # health view and /metrics logical reads per call, large over small
COST_CALLS = 50  # calls measured per measure (their mean is reported)
WARM_CALLS = 3  # unmeasured calls first: the compilation after the load's statistics update
DUE_ITEMS = 20  # due items of the claimed type, in both arms
SESSION = ("SELECT s.login_time, s.logical_reads, s.cpu_time FROM sys.dm_exec_sessions AS s "
           "WHERE s.session_id = ?;")


class Unreliable(RelqError):
    """A counter was reset or evicted between two reads: the difference means nothing."""


# -- the counters and their arithmetic ------------------------------------------------------------


@dataclass(frozen=True)
class SessionCounters:
    """One session's cumulative counters, as sys.dm_exec_sessions shows them."""

    session_id: int
    login_time: datetime | None  # None: the session is gone
    logical_reads: int
    cpu_ms: int

    @classmethod
    def from_row(cls, session_id: int, row: Mapping[str, Any] | None) -> SessionCounters:
        if row is None:
            return cls(session_id, None, 0, 0)
        return cls(session_id, row["login_time"], int(row["logical_reads"]), int(row["cpu_time"]))


@dataclass(frozen=True)
class Spent:
    """What a session spent between two reads of its counters."""

    logical_reads: int
    cpu_ms: int


def spent(before: SessionCounters, after: SessionCounters) -> Spent:
    """``after`` minus ``before``; Unreliable when the session is gone, is another one (its
    login_time changed: it reconnected) or a counter went down (it was reset)."""
    who = f"session {before.session_id}"
    if before.session_id != after.session_id:
        raise Unreliable(f"{who}: compared with session {after.session_id}")
    if before.login_time is None or after.login_time is None:
        raise Unreliable(f"{who} was not found (closed, or this login lacks VIEW SERVER STATE): "
                         "its counters are unknown")
    if before.login_time != after.login_time:
        raise Unreliable(f"{who} logged in again between two reads: its counters started over")
    reads, cpu = after.logical_reads - before.logical_reads, after.cpu_ms - before.cpu_ms
    if reads < 0 or cpu < 0:
        raise Unreliable(f"{who}'s counters went down (logical reads {before.logical_reads:,} -> "
                         f"{after.logical_reads:,}, CPU ms {before.cpu_ms:,} -> {after.cpu_ms:,}): "
                         "they were reset")
    return Spent(reads, cpu)


@dataclass(frozen=True)
class Measure:
    """COST_CALLS calls of one reader in one arm: what they cost in all, or why unknown."""

    arm: str  # "1,000 in the way"
    what: str  # the call
    calls: int
    logical_reads: int | None
    cpu_ms: int | None
    problem: str = ""

    @property
    def reads_per_call(self) -> float | None:
        return None if self.logical_reads is None or self.calls <= 0 else self.logical_reads / self.calls

    @property
    def cpu_ms_per_call(self) -> float | None:
        return None if self.cpu_ms is None or self.calls <= 0 else self.cpu_ms / self.calls

    def as_dict(self) -> dict[str, Any]:
        return {"arm": self.arm, "what": self.what, "calls": self.calls, "logical_reads": self.logical_reads,
                "cpu_ms": self.cpu_ms, "reads_per_call": self.reads_per_call,
                "cpu_ms_per_call": self.cpu_ms_per_call, "problem": self.problem}


def measured(arm: str, what: str, calls: int, before: SessionCounters, after: SessionCounters) -> Measure:
    """The Measure of ``calls`` calls between two reads of the session's counters: without
    figures, and saying why, when the counters were reset."""
    try:
        used = spent(before, after)
    except Unreliable as exc:
        return Measure(arm, what, calls, None, None, str(exc))
    if calls <= 0:
        return Measure(arm, what, calls, None, None, "no call was measured")
    return Measure(arm, what, calls, used.logical_reads, used.cpu_ms)


@dataclass(frozen=True)
class Bound:
    """A measured value held to a limit: the run fails past it, or when it is unknown."""

    name: str
    value: float | None
    limit: float
    unit: str = "x"  # "x" for a ratio
    note: str = ""  # what it compares, or why there is no value

    @property
    def ok(self) -> bool:
        return self.value is not None and math.isfinite(self.value) and self.value <= self.limit

    def shown(self) -> str:
        if self.value is None:
            return f"n/a ({self.note})"
        return f"{self.value:,.2f}{self.unit}" if self.unit == "x" else f"{self.value:,.3f} {self.unit}"

    def problem(self) -> str | None:
        if self.ok:
            return None
        if self.value is None:
            return f"{self.name}: not measured ({self.note})"
        limit = f"{self.limit:g}x" if self.unit == "x" else f"{self.limit:g}"
        return f"{self.name}: {self.shown()}, over the bound of {limit}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "limit": self.limit, "unit": self.unit,
                "note": self.note, "ok": self.ok}


def bound(small: Measure, large: Measure, limit: float) -> Bound:
    """The bound of one reader: its reads per call in the large arm over the small one."""
    return ratio_bound(f"reads per call of {small.what}, {large.arm} over {small.arm}", large, small, limit)


def ratio_bound(name: str, large: Measure, small: Measure, limit: float) -> Bound:
    """Reads per call with the large table over the small one, held to ``limit``."""
    r: Ratio = ratio(name, (large.arm, large.reads_per_call), (small.arm, small.reads_per_call))
    note = r.note or f"{r.numerator} over {r.denominator}"
    if r.value is None and (large.problem or small.problem):
        note = "; ".join(p for p in (large.problem, small.problem) if p)
    return Bound(name, r.value, limit, "x", note)


@dataclass
class CostResult:
    """One cost scenario: its measures, the bounds they are held to, what else it saw."""

    name: str
    question: str
    measures: list[Measure] = field(default_factory=list)
    bounds: list[Bound] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        found = list(self.problems)
        found += [f"{m.arm}, {m.what}: {m.problem}" for m in self.measures if m.problem]
        found += [p for b in self.bounds if (p := b.problem()) is not None]
        return found

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "question": self.question,
                "measures": [m.as_dict() for m in self.measures],
                "bounds": [b.as_dict() for b in self.bounds], "notes": self.notes, "problems": self.problems,
                "ok": not self.failures()}


def costs_table(costs: Sequence[CostResult]) -> Table:
    """One row per measure, then one per bound, with its verdict."""
    grid = Table(title="cost as the tables grow (server counters of the calls' own session)")
    for column in ("scenario", "arm", "what", "calls", "reads/call", "CPU ms/call", "bound", "check"):
        figure = column in ("calls", "reads/call", "CPU ms/call")
        grid.add_column(column, justify="right" if figure else "left")
    for c in costs:
        for m in c.measures:
            grid.add_row(c.name, m.arm, m.what, str(m.calls), _figure(m.reads_per_call, 1),
                         _figure(m.cpu_ms_per_call, 2), "",
                         Text(m.problem, style="red") if m.problem else Text("ok", style="green"))
        for b in c.bounds:
            grid.add_row(c.name, "", b.name, "", "", "", f"{b.shown()} (at most {b.limit:g})",
                         Text("ok", style="green") if b.ok else Text("FAIL", style="red"))
        for n in c.notes:
            grid.add_row(c.name, "", Text(n, style="dim"), "", "", "", "", "")
    return grid


def _figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


# -- measuring (live) -------------------------------------------------------------------------------


class Loads(Protocol):
    """What a scenario needs of bench.scenarios.Runner: its settings and its loader."""

    settings: Any

    def load(self, conn_str: str, what: str, sql: str, count: int, tables: Sequence[str],
             empty_first: bool = False) -> None: ...


class Meter:
    """The counters of one measured session, read from another connection."""

    def __init__(self, monitor: Any, measured: Any) -> None:
        self.cursor = monitor.cursor()
        self.session_id = int(db.query(measured.cursor(), "SELECT @@SPID;")[0][0])

    def read(self) -> SessionCounters:
        rows = db.query(self.cursor, SESSION, self.session_id)
        names = ("login_time", "logical_reads", "cpu_time")
        row = None if not rows else dict(zip(names, rows[0], strict=True))
        return SessionCounters.from_row(self.session_id, row)


def measure(meter: Meter, arm: str, what: str, call: Callable[[], Any],
            between: Callable[[Any], None] = lambda _: None, calls: int = COST_CALLS,
            warm: int = WARM_CALLS) -> Measure:
    """``warm`` calls, then ``calls`` calls between two reads of the session's counters;
    ``between`` gets each call's result (on another connection: completing, refilling)."""
    for _ in range(warm):
        between(call())
    before = meter.read()
    for _ in range(calls):
        between(call())
    return measured(arm, what, calls, before, meter.read())


def wait_until_due(cursor: Any, queue: str, limit_s: float = 30.0) -> None:
    """Until the server's clock passes the queue's last key: loaders write keys of
    consecutive microseconds from the last one, so after a large load the last items' keys
    (and their ScheduledFor) may lie up to a second ahead, not yet due."""
    ahead = db.query(cursor, f"SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MAX(q.EnqueuedAt)) "
                             f"FROM dbo.{_identifier(queue)} AS q;")[0][0]
    if ahead is not None and ahead > 0:
        time.sleep(min(limit_s, ahead / 1000 + 0.01))


def _identifier(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"not a name: {name!r}")
    return name


IN_THE_WAY_SQL = """
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Count INT = ?;
DECLARE @MaxAttempts INT = dbo.AppSettingInt_fn('{setting}');
DECLARE @Lock INT;
DECLARE @First DATETIME2(7);
DECLARE @Type VARCHAR(50) = (SELECT MIN(t.[Type]) FROM dbo.{queue}Type AS t);
DECLARE @Other VARCHAR(50) = (SELECT MAX(t.[Type]) FROM dbo.{queue}Type AS t);
DECLARE @Later DATETIME2(7) = DATEADD(DAY, 1, SYSUTCDATETIME());
BEGIN TRANSACTION;
{lock}
SELECT @First = dbo.QueueNextKey_fn(MAX(q.EnqueuedAt)) FROM dbo.{queue} AS q WITH (READUNCOMMITTED);
{numbers}
INSERT INTO dbo.{queue} (
    EnqueuedAt, [Type], {columns}[Status], AttemptNum, ScheduledFor, UpdatedAt, [Priority]
)
SELECT k.EnqueuedAt, CASE WHEN k.Kind >= 11 THEN @Other ELSE @Type END, {values}
    CASE WHEN k.Kind < 2 THEN 'Error' ELSE 'Pending' END,
    CASE WHEN k.Kind < 2 THEN @MaxAttempts ELSE 0 END,
    CASE WHEN k.Kind < 2 THEN k.EnqueuedAt ELSE @Later END,
    k.EnqueuedAt, 1
FROM numbers AS n
CROSS APPLY (SELECT DATEADD(MICROSECOND, n.i, @First) AS EnqueuedAt, n.i % 20 AS Kind) AS k;
COMMIT TRANSACTION;
"""
# The columns a queue needs beyond those every queue has (SyncQueue: the entity to sync).
_EXTRA = {"SyncQueue": ("EntityKey, ", "N'bench-way-' + CONVERT(NVARCHAR(30), k.EnqueuedAt, 126),")}


def in_the_way_sql(queue: str) -> str:
    """The loader of ``?`` items in the way of ``queue``'s claim (see the module), as the
    loaders of bench.backlog write theirs (the enqueue lock, the key scheme); exhausted at
    the queue's attempt limit, '<queue>.maxAttempts' (dbo.AppSettingInt_fn)."""
    columns, values = _EXTRA.get(_identifier(queue), ("", ""))
    return IN_THE_WAY_SQL.format(queue=queue, lock=backlog._ENQUEUE_LOCK.format(queue=f"dbo.{queue}"),
                                 numbers=backlog._NUMBERS, columns=columns, values=values,
                                 setting=max_attempts_setting(queue))


def max_attempts_setting(queue: str) -> str:
    """The setting of a queue's attempt limit: syncqueue.maxAttempts."""
    return f"{_identifier(queue).lower()}.maxAttempts"


@dataclass(frozen=True)
class ClaimCall:
    """One claim measured: its queue, its @Type (None: any), the loader of its due items."""

    queue: str
    type_param: bool  # the claimed type as @Type, or NULL
    due_sql: str
    due_tables: tuple[str, ...]

    def label(self, claimed_type: str | None) -> str:
        shown = f"'{claimed_type}'" if self.type_param else "NULL"
        return f"dbo.Next_{self.queue}_Batch_trx @Type = {shown}"


CLAIMS = (ClaimCall("SyncQueue", True, backlog.SYNC_QUEUE, ("SyncQueue",)),
          ClaimCall("SyncQueue", False, backlog.SYNC_QUEUE, ("SyncQueue",)),
          ClaimCall("Notification", False, backlog.NOTIFICATION,
                    ("Notification", "Notification_ResetPassword", "Notification_Email")))
EXHAUSTED = "SELECT COUNT_BIG(*) FROM dbo.{queue} WHERE [Status] = 'Error' AND AttemptNum >= ?;"


def warmup_limit(exhausted: int, want: int) -> int:
    """The claims a warm-up may take to fail ``exhausted`` items, each claim failing up to
    ``want`` of them: twice what they need, plus WARM_CALLS + 10."""
    return 2 * math.ceil(exhausted / want) + WARM_CALLS + 10


class _Claims:
    """The claims of one arm on the measured connection, the refills on the helper's."""

    def __init__(self, runner: Loads, conn_str: str, conn: Any, helper: Any) -> None:
        self.runner, self.conn_str, self.conn, self.helper = runner, conn_str, conn, helper
        self.cursor = helper.cursor()
        self.batch = runner.settings.batch

    def call(self, claim: ClaimCall, claimed_type: str) -> Callable[[], list[tuple]]:
        procedure = f"dbo.Next_{claim.queue}_Batch_trx"
        params: dict[str, Any] = {"LockedBy": "bench/cost", "BatchSize": self.batch, "WaitMs": 0}
        if claim.type_param:
            params["Type"] = claimed_type
        return lambda: checked(db.call(self.conn, procedure, **params), procedure)

    def refill(self, claim: ClaimCall) -> Callable[[list[tuple]], None]:
        """Complete what a call claimed, then write as many new due items: DUE_ITEMS stay due."""
        def after(rows: list[tuple]) -> None:
            if rows:
                complete(self.cursor, claim.queue, rows)
                backlog.load(self.helper, claim.due_sql, len(rows))
        return after


def claimcost(runner: Loads, conn_str: str) -> CostResult:
    """The claimcost scenario in the throwaway database ``conn_str`` names."""
    s = runner.settings
    result = CostResult("claimcost", "Does a claim cost the due work, not the items in its way?")
    conn, helper, monitor = (db.connect(conn_str) for _ in range(3))
    for c in (conn, helper, monitor):
        c.timeout = 0  # a warm-up over a million items may take a while on a small server
    try:
        cursor = helper.cursor()
        claimed = {q: db.query(cursor, f"SELECT MIN(t.[Type]) FROM dbo.{q}Type AS t;")[0][0]
                   for q in dict.fromkeys(c.queue for c in CLAIMS)}
        limits = {q: int(db.query(cursor, "SELECT dbo.AppSettingInt_fn(?);", max_attempts_setting(q))[0][0])
                  for q in claimed}
        claims = _Claims(runner, conn_str, conn, helper)
        meter = Meter(monitor, conn)
        by_arm: list[list[Measure]] = []
        loaded = 0
        for size in (s.small_backlog, s.large_backlog):
            arm = f"{size:,} in the way"
            for queue in claimed:
                runner.load(conn_str, f"{queue} items in the way", in_the_way_sql(queue), size - loaded,
                            (queue,))
                if loaded == 0:  # the due items stay DUE_ITEMS: each claim's are replaced
                    due = next(c for c in CLAIMS if c.queue == queue)
                    runner.load(conn_str, f"due {queue} items", due.due_sql, DUE_ITEMS, due.due_tables)
            loaded = size
            by_arm.append([])
            for claim in CLAIMS:
                wait_until_due(cursor, claim.queue)
                call = claims.call(claim, claimed[claim.queue])
                result.notes += _warm_up(cursor, claim, call, claims.refill(claim), limits[claim.queue],
                                         s.batch + 16, arm, claimed[claim.queue], result.problems)
                by_arm[-1].append(measure(meter, arm, claim.label(claimed[claim.queue]), call,
                                          claims.refill(claim)))
            result.measures += by_arm[-1]
        small, large = by_arm
        result.bounds = [bound(s_, l_, CLAIM_BOUND) for s_, l_ in zip(small, large, strict=True)]
        return result
    finally:
        for c in (conn, helper, monitor):
            c.close()


def _warm_up(cursor: Any, claim: ClaimCall, call: Callable[[], list[tuple]],
             after: Callable[[list[tuple]], None], limit: int, want: int, arm: str, claimed_type: str,
             problems: list[str]) -> list[str]:
    """Claims until no exhausted item is left in the claim index (at least WARM_CALLS); a
    problem when that takes more than warmup_limit claims."""
    sql = EXHAUSTED.format(queue=_identifier(claim.queue))
    exhausted = int(db.query(cursor, sql, limit)[0][0])
    most = warmup_limit(exhausted, want)
    calls = 0
    left = exhausted
    while calls < WARM_CALLS or left:
        if calls >= most:
            problems.append(f"{arm}, {claim.label(claimed_type)}: {left:,} of {exhausted:,} exhausted items "
                            f"were still in the claim index after {calls} claims (each claim fails up to "
                            f"{want} of those it meets): they are read by every claim instead of failed once")
            break
        after(call())
        calls += 1
        if left:
            left = int(db.query(cursor, sql, limit)[0][0])
    if not exhausted:
        return []
    return [f"{arm}: {exhausted:,} exhausted {claim.queue} items failed by {calls} warm-up claims of "
            f"{claim.label(claimed_type)} (at most {most})"]


# -- healthcost -------------------------------------------------------------------------------------

HEALTH_VIEW = "SELECT * FROM dbo.QueueHealth_V;"
THROUGHPUT_VIEW = "SELECT * FROM dbo.QueueThroughput_V;"
# The unfinished items go before more finished ones are loaded: the finished loader writes
# keys a day old or more after the last key, which an unfinished item's (now) would forbid.
DROP_UNFINISHED = "DELETE FROM dbo.SyncQueue WHERE [Status] = 'Pending';"


def health_readers(conn: Any) -> dict[str, Callable[[], Any]]:
    """relq's own health readers on ``conn``: the two views, and what a /metrics scrape runs
    (the dashboard's store and its Prometheus exposition, imported, not copied)."""
    from relq.dashboard import metrics
    from relq.dashboard.store import SqlStore

    store = SqlStore(lambda: conn)  # never closed here: the connection is the caller's
    counters = metrics.Counters()

    def scrape() -> bytes:  # what the /metrics route runs: the health, the counters' reads, the text
        queues = store.health()
        counters.scrape(store)
        return metrics.exposition(queues, counters.totals())

    def select(sql: str) -> Callable[[], Any]:
        def run() -> list[tuple]:
            cursor = conn.cursor()
            try:
                return db.query(cursor, sql)
            finally:
                cursor.close()
        return run

    return {HEALTH_VIEW.rstrip(";"): select(HEALTH_VIEW),
            THROUGHPUT_VIEW.rstrip(";"): select(THROUGHPUT_VIEW),
            "/metrics (SqlStore.health, Counters.scrape, exposition)": scrape}


def healthcost(runner: Loads, conn_str: str) -> CostResult:
    """The healthcost scenario in the throwaway database ``conn_str`` names."""
    s = runner.settings
    result = CostResult("healthcost", "Do the health views and /metrics cost the same whatever the history?")
    conn, monitor = db.connect(conn_str), db.connect(conn_str)
    conn.timeout = monitor.timeout = 0
    try:
        cursor = monitor.cursor()
        meter = Meter(monitor, conn)
        readers = health_readers(conn)
        by_arm: list[list[Measure]] = []
        loaded = 0
        for size in (s.small_backlog, s.large_backlog):
            arm = f"{size:,} finished"
            if loaded:
                db.run_batch(cursor, DROP_UNFINISHED)
            runner.load(conn_str, "finished SyncQueue items", backlog.FINISHED_SYNC_QUEUE, size - loaded,
                        ("SyncQueue", "SyncQueueAttempt"))
            runner.load(conn_str, "unfinished SyncQueue items", backlog.SYNC_QUEUE, DUE_ITEMS, ("SyncQueue",))
            loaded = size
            wait_until_due(cursor, "SyncQueue")
            by_arm.append([measure(meter, arm, what, call) for what, call in readers.items()])
            result.measures += by_arm[-1]
        small, large = by_arm
        result.bounds = [bound(s_, l_, HEALTH_BOUND) for s_, l_ in zip(small, large, strict=True)]
        return result
    finally:
        conn.close()
        monitor.close()

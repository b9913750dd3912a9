"""What the load scenarios (bench.producers, bench.transport) share: client processes in
roles (producers and consumers, senders, receivers, a purge), the server counters read
around them, and the result and table of a load scenario.

Each client is a process of its own (multiprocessing, spawned) with its own connection
through relq.db, as bench.workers' workers are, so that neither the GIL nor a shared
connection limits what the server is asked to do. Every process runs its role untimed
for the warm-up, waits at a barrier with the others and the parent, then runs for the
arm's seconds. The parent reads the counters right after the barrier and right after
the last process's result.

The counters:
- PAGELATCH_% waits: waiting_tasks_count and wait_time_ms of each PAGELATCH_ wait type
  of sys.dm_os_wait_stats, cumulative since the instance started (or since they were
  cleared with DBCC SQLPERF): **server-wide**, every session on the instance counts.
  Needs VIEW SERVER STATE
  (https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-wait-stats-transact-sql).
  A count that went down was cleared in between: that arm's waits are not known.
- Lock promotions: index_lock_promotion_count of sys.dm_db_index_operational_stats for
  each index of the arm's tables in the bench's database ("cumulative number of times
  the Database Engine escalated locks"). Its counters live as long as the index's entry
  in the metadata cache and start at zero when it comes back
  (https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-index-operational-stats-transact-sql),
  so they are read per index: an index whose count went down, or that left the cache
  between the two reads, was reset, and the promotions are not known, which fails
  the arm like a promotion does; an index that entered the cache during the arm
  counts from zero. Needs VIEW DATABASE STATE in the bench's database.
"""

from __future__ import annotations

import importlib
import multiprocessing
import queue as queues
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.table import Table
from rich.text import Text

from bench.stats import Ratio, rate
from bench.workers import START_TIMEOUT_S, STOP_GRACE_S, stop_processes, wait_at_barrier
from relq import db
from relq.errors import RelqError

DEADLOCK = 1205  # chosen as the deadlock victim
LOCK_TIMEOUT = 1222  # a lock not granted within the session's LOCK_TIMEOUT
COUNTED = (DEADLOCK, LOCK_TIMEOUT)  # errors a client counts and goes on after; any other ends it
RETRIES = 5
QUERY_TIMEOUT_S = 120
FINISH_MARGIN_S = 300
SCOPE = (
    "PAGELATCH_% waits are server-wide (every session on the instance counts); lock promotions "
    "are the bench database's own tables'"
)

WAITS = (
    "SELECT w.wait_type, w.waiting_tasks_count, w.wait_time_ms FROM sys.dm_os_wait_stats AS w "
    "WHERE w.wait_type LIKE N'PAGELATCH[_]%';"
)
PROMOTIONS = """
SELECT o.name, s.index_id, SUM(s.index_lock_promotion_count)
FROM sys.dm_db_index_operational_stats(DB_ID(), NULL, NULL, NULL) AS s
INNER JOIN sys.objects AS o ON o.object_id = s.object_id
WHERE o.type = 'U' AND o.is_ms_shipped = 0
GROUP BY o.name, s.index_id;
"""

Waits = dict[str, tuple[int, int]]  # wait type -> (waiting tasks, wait ms)
Promotions = dict[tuple[str, int], int]  # (table, index_id) -> promotions


# -- the counters' arithmetic ----------------------------------------------------------------------


@dataclass(frozen=True)
class WaitDelta:
    """PAGELATCH_% waits during an arm, per wait type; ``problem`` when they are not known."""

    by_type: dict[str, tuple[int, int]]
    problem: str = ""

    @property
    def tasks(self) -> int | None:
        return None if self.problem else sum(t for t, _ in self.by_type.values())

    @property
    def ms(self) -> int | None:
        return None if self.problem else sum(m for _, m in self.by_type.values())

    def shown(self) -> str:
        if self.problem:
            return f"n/a ({self.problem})"
        return f"{self.tasks:,} ({self.ms:,} ms)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "waiting_tasks": self.tasks,
            "wait_ms": self.ms,
            "problem": self.problem,
            "by_type": {k: {"waiting_tasks": t, "wait_ms": m} for k, (t, m) in sorted(self.by_type.items())},
        }


def wait_delta(before: Waits | None, after: Waits | None) -> WaitDelta:
    """``after`` minus ``before`` for each PAGELATCH_ wait type with waits in between; not
    known when either read failed (no VIEW SERVER STATE) or a count went down (cleared)."""
    if before is None or after is None:
        return WaitDelta({}, "not readable: needs VIEW SERVER STATE")
    delta: dict[str, tuple[int, int]] = {}
    for wait_type in sorted(set(before) | set(after)):
        tasks0, ms0 = before.get(wait_type, (0, 0))
        tasks1, ms1 = after.get(wait_type, (0, 0))
        if tasks1 < tasks0 or ms1 < ms0:
            return WaitDelta(
                {},
                f"{wait_type} went down ({tasks0:,} -> {tasks1:,} waits): the wait "
                "statistics were cleared during the arm",
            )
        if tasks1 > tasks0 or ms1 > ms0:
            delta[wait_type] = (tasks1 - tasks0, ms1 - ms0)
    return WaitDelta(delta)


@dataclass(frozen=True)
class PromotionDelta:
    """Lock promotions during an arm on each of its tables; ``problem`` when not known."""

    by_table: dict[str, int]
    problem: str = ""

    @property
    def total(self) -> int | None:
        return None if self.problem else sum(self.by_table.values())

    def failure(self) -> str | None:
        """Why the arm fails on promotions: any, or not known; None when there were none."""
        if self.problem:
            return f"lock promotions not measured ({self.problem})"
        promoted = {t: n for t, n in self.by_table.items() if n}
        if promoted:
            return "lock promotions (escalations to a table lock): " + ", ".join(
                f"{n:,} on dbo.{t}" for t, n in sorted(promoted.items())
            )
        return None

    def shown(self) -> str:
        return f"n/a ({self.problem})" if self.problem else f"{self.total:,}"

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total, "by_table": self.by_table, "problem": self.problem}


def promotion_delta(
    before: Promotions | None, after: Promotions | None, tables: Sequence[str]
) -> PromotionDelta:
    """Promotions on ``tables`` between two reads, per table, from per-index counts: an index
    that entered the cache in between counts from 0; one whose count went down or that left
    the cache was reset, and then the promotions are not known."""
    if before is None or after is None:
        return PromotionDelta({}, "not readable: needs VIEW DATABASE STATE")
    by_table = dict.fromkeys(tables, 0)
    for (table, index_id), count in sorted(after.items()):
        if table not in by_table:
            continue
        was = before.get((table, index_id), 0)
        if count < was:
            return PromotionDelta(
                {}, f"the counters of dbo.{table} (index {index_id}) were reset during the arm"
            )
        by_table[table] += count - was
    gone = sorted(k for k in before if k[0] in by_table and k not in after)
    if gone:
        table, index_id = gone[0]
        return PromotionDelta(
            {},
            f"dbo.{table} (index {index_id}) left the metadata cache during the arm: its counters were reset",
        )
    return PromotionDelta(by_table)


def read_waits(cursor: Any) -> Waits | None:
    try:
        return {str(t): (int(n), int(ms)) for t, n, ms in db.query(cursor, WAITS)}
    except db.SqlError:
        return None


def read_promotions(cursor: Any) -> Promotions | None:
    try:
        return {(str(t), int(i)): int(n or 0) for t, i, n in db.query(cursor, PROMOTIONS)}
    except db.SqlError:
        return None


# -- the client processes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Role:
    """``count`` client processes, each running the action that ``factory``
    ("module:function") builds on its connection, with ``params``."""

    name: str  # "producer", "consumer", "sender", "receiver", "purge"
    factory: str
    count: int
    params: tuple[tuple[str, Any], ...] = ()
    lock_timeout_ms: int | None = None  # SET LOCK_TIMEOUT for the client's session; None: wait forever

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)


class Action(Protocol):
    """One client's work: ``step`` makes one call (or a claim and its report) and returns
    the items it moved, 0 for an empty call; ``ledger`` is what it wants reported."""

    ledger: list[Any]

    def step(self, retry: Callable[[Callable[[], Any]], Any]) -> int: ...


@dataclass
class Tally:
    """What a client's calls did."""

    items: int = 0
    calls: int = 0
    empty: int = 0
    errors: dict[int, int] = field(default_factory=dict)  # COUNTED error number -> times

    def count_error(self, number: int) -> None:
        self.errors[number] = self.errors.get(number, 0) + 1


def retrying(tally: Tally) -> Callable[[Callable[[], Any]], Any]:
    """A call that repeats after a COUNTED error (up to RETRIES times), counting each."""

    def retry(call: Callable[[], Any]) -> Any:
        for attempt in range(RETRIES):
            try:
                return call()
            except db.SqlError as exc:
                if exc.number not in COUNTED or attempt == RETRIES - 1:
                    raise
                tally.count_error(exc.number)
        raise AssertionError("unreachable")

    return retry


def run_steps(
    action: Action,
    seconds: float,
    tally: Tally,
    clock: Callable[[], float] = time.perf_counter,
    pause: Callable[[float], None] = time.sleep,
) -> float:
    """Step ``action`` for ``seconds``; a COUNTED error ends the step (counted), others end
    the client. Returns the time taken."""
    retry = retrying(tally)
    start = clock()
    end = start + seconds
    while clock() < end:
        try:
            moved = action.step(retry)
        except db.SqlError as exc:
            if exc.number not in COUNTED:
                raise
            tally.count_error(exc.number)
            continue
        tally.calls += 1
        if moved:
            tally.items += moved
        else:
            tally.empty += 1
            pause(0.001)
    return clock() - start


def build(role: Role, conn: Any, slot: int) -> Action:
    module, function = role.factory.split(":")
    return getattr(importlib.import_module(module), function)(conn, role, slot)


def client(
    conn_str: str, role: Role, slot: int, seconds: float, warmup: float, barrier: Any, results: Any
) -> None:
    """A client process: connect, warm up (untimed), wait for the others, run ``seconds``.
    Puts one dict on ``results``: its tallies and ledger, or its error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone answers Ctrl-C
    out: dict[str, Any] = {"role": role.name, "slot": slot}
    try:
        conn = db.connect(conn_str)
        conn.timeout = QUERY_TIMEOUT_S
        if role.lock_timeout_ms is not None:
            db.run_batch(conn.cursor(), f"SET LOCK_TIMEOUT {int(role.lock_timeout_ms)};")
        action = build(role, conn, slot)
        warm = Tally()
        run_steps(action, warmup, warm)
        barrier.wait(START_TIMEOUT_S)
        timed = Tally()
        elapsed = run_steps(action, seconds, timed)
        out.update(
            elapsed=elapsed,
            items=timed.items,
            calls=timed.calls,
            empty=timed.empty,
            errors={n: warm.errors.get(n, 0) + timed.errors.get(n, 0) for n in COUNTED},
            warmup_items=warm.items,
            ledger=action.ledger,
        )
        conn.close()
    except threading.BrokenBarrierError:
        out["error"] = "another client failed to start"
    except Exception as exc:  # the parent reports it
        out["error"] = f"{role.name} {slot}: {type(exc).__name__}: {exc}"
        barrier.abort()
    results.put(out)


@dataclass
class Run:
    """What the clients of one arm did, and the counters around it."""

    outs: list[dict[str, Any]]
    waits: WaitDelta
    promotions: PromotionDelta

    def of(self, role: str) -> list[dict[str, Any]]:
        return [o for o in self.outs if o["role"] == role]

    def items(self, role: str, warmup: bool = False) -> int:
        return sum(o["items"] + (o["warmup_items"] if warmup else 0) for o in self.of(role))

    def elapsed(self, role: str) -> float:
        return max((o["elapsed"] for o in self.of(role)), default=0.0)

    def per_s(self, role: str) -> float:
        took = self.elapsed(role)
        return rate(self.items(role), took) if took > 0 else 0.0

    def errors(self) -> dict[int, int]:
        return {n: sum(o["errors"].get(n, 0) for o in self.outs) for n in COUNTED}

    def ledger(self, role: str) -> list[Any]:
        return [entry for o in self.of(role) for entry in o["ledger"]]


def run_roles(
    conn_str: str,
    roles: Sequence[Role],
    seconds: float,
    warmup: float,
    tables: Sequence[str],
    tick: Callable[[float], None] | None = None,
) -> Run:
    """Run the clients of ``roles`` for one arm; the counters on ``tables`` around it."""
    ctx = multiprocessing.get_context("spawn")  # no pyodbc state inherited from the parent
    total = sum(r.count for r in roles)
    barrier = ctx.Barrier(total + 1)
    results = ctx.Queue()
    processes = [
        ctx.Process(
            target=client, args=(conn_str, role, slot, seconds, warmup, barrier, results), daemon=True
        )
        for role in roles
        for slot in range(role.count)
    ]
    monitor = db.connect(conn_str)
    finished = False
    try:
        cursor = monitor.cursor()
        for process in processes:
            process.start()
        why = wait_at_barrier(barrier, processes, START_TIMEOUT_S)
        waits0, promotions0 = read_waits(cursor), read_promotions(cursor)
        outs = collect(results, processes, seconds, tick)
        waits1, promotions1 = read_waits(cursor), read_promotions(cursor)
        if why is not None:
            raise RelqError(why)
        finished = True
        return Run(outs, wait_delta(waits0, waits1), promotion_delta(promotions0, promotions1, tables))
    finally:
        stop_processes(processes, STOP_GRACE_S if finished else 0.0)
        monitor.close()


def collect(
    results: Any, processes: Sequence[Any], seconds: float, tick: Callable[[float], None] | None
) -> list[dict[str, Any]]:
    """Every client's dict, or a RelqError naming the clients that failed."""
    outs: list[dict[str, Any]] = []
    started = time.monotonic()
    deadline = started + START_TIMEOUT_S + seconds + FINISH_MARGIN_S
    while len(outs) < len(processes):
        if tick is not None:
            tick(min(1.0, (time.monotonic() - started) / seconds))
        try:
            outs.append(results.get(timeout=0.2))
            continue
        except queues.Empty:
            pass
        dead = [p for p in processes if p.exitcode not in (None, 0)]
        if dead or time.monotonic() > deadline:
            raise RelqError(
                f"{len(dead)} client process(es) died" if dead else "the clients did not finish in time"
            )
    errors = sorted({o["error"] for o in outs if "error" in o})
    if errors:
        raise RelqError("; ".join(errors))
    return outs


# -- the result --------------------------------------------------------------------------------------


@dataclass
class LoadArm:
    """One arm of a load scenario: its clients, what they did, the counters, its checks."""

    label: str
    queue: str
    clients: dict[str, int]  # role -> processes
    seconds: float  # the slowest client's timed seconds
    counts: dict[str, int]  # what moved: produced, consumed, purged, ...
    rates: dict[str, float]  # per second, of the timed part
    errors: dict[int, int]  # 1205 and 1222 in the clients' calls
    waits: WaitDelta
    promotions: PromotionDelta
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        found = list(self.problems)
        promoted = self.promotions.failure()
        return found + ([promoted] if promoted else [])

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "queue": self.queue,
            "clients": self.clients,
            "seconds": round(self.seconds, 3),
            "counts": self.counts,
            "rates": {k: round(v, 1) for k, v in self.rates.items()},
            "errors": {str(k): v for k, v in self.errors.items()},
            "pagelatch_waits": self.waits.as_dict(),
            "lock_promotions": self.promotions.as_dict(),
            "notes": self.notes,
            "problems": self.problems,
            "ok": not self.failures(),
        }


@dataclass
class LoadResult:
    """A load scenario: its arms, the ratios between them, what else it saw."""

    name: str
    question: str
    arms: list[LoadArm] = field(default_factory=list)
    ratios: list[Ratio] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        return list(self.problems) + [f"{a.label}: {p}" for a in self.arms for p in a.failures()]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "question": self.question,
            "scope": SCOPE,
            "arms": [a.as_dict() for a in self.arms],
            "ratios": [r.as_dict() for r in self.ratios],
            "notes": self.notes,
            "problems": self.problems,
            "ok": not self.failures(),
        }


def _shown_counts(arm: LoadArm) -> str:
    return ", ".join(
        f"{k} {v:,}" + (f" ({arm.rates[k]:,.0f}/s)" if k in arm.rates else "") for k, v in arm.counts.items()
    )


def loads_table(results: Sequence[LoadResult]) -> Table:
    """One row per arm, then the ratios and the notes."""
    grid = Table(title="producers, consumers and the transport purge", caption=SCOPE)
    for column in (
        "scenario",
        "arm",
        "clients",
        "counts",
        "PAGELATCH waits",
        "lock promotions",
        "1205/1222",
        "check",
    ):
        grid.add_column(column)
    for r in results:
        for a in r.arms:
            failures = a.failures()
            grid.add_row(
                r.name,
                a.label,
                ", ".join(f"{n} {k}" for k, n in a.clients.items()),
                _shown_counts(a),
                a.waits.shown(),
                a.promotions.shown(),
                f"{a.errors.get(DEADLOCK, 0)}/{a.errors.get(LOCK_TIMEOUT, 0)}",
                Text("; ".join(failures), style="red") if failures else Text("ok", style="green"),
            )
        for ratio in r.ratios:
            grid.add_row(r.name, "", "", ratio.name, "", "", "", ratio.shown())
        for note in [*r.notes, *[f"{a.label}: {n}" for a in r.arms for n in a.notes]]:
            grid.add_row(r.name, "", "", Text(note, style="dim"), "", "", "", "")
        for problem in r.problems:
            grid.add_row(r.name, "", "", Text(problem, style="red"), "", "", "", "FAIL")
    return grid


def client_note(processes: int, cpus: int | None) -> list[str]:
    """What may bound the figures on the client: ``processes`` clients want as many CPUs."""
    if cpus is not None and processes + 1 > cpus:
        return [
            f"the client has {cpus} CPUs for {processes} client processes: the figures with many clients, "
            "and their ratios, may be bound by the client, not the server"
        ]
    return []


def rows_of(conn_str: str, sql: str, *params: Any) -> list[tuple]:
    """One query on a connection of its own."""
    conn = db.connect(conn_str)
    conn.timeout = 0
    try:
        return db.query(conn.cursor(), sql, *params)
    finally:
        conn.close()

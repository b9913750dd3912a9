"""The idle scenario: what relq's own worker costs the server while its queue is empty.

IDLE_SLOTS slots of relq.worker (its runtime, relq.worker.runtime.Worker, with its
default settings and its own connector, relq.worker.cli.sql_connector) run against an
empty SyncQueue for --idle-seconds, in a thread of the bench process. Measured from
the server, between two reads taken once every slot has made its first claim and
joined the worker's idle gate:
- statements: the executions of the bench database's procedures, deltas of
  sys.dm_exec_procedure_stats.execution_count (cumulative while the procedure's plan
  stays cached; one row per cached plan:
  https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-procedure-stats-transact-sql).
  The worker calls one procedure, dbo.Next_SyncQueue_Batch_trx, which calls
  dbo.Next_SyncQueue_utx: its calls are the statements the worker sends, and every
  execution (nested ones included) is reported beside them. A plan evicted or
  recompiled between the two reads (its row gone, its cached_time changed, its count
  lower) makes the count unknown: the scenario fails rather than report it.
- CPU: the worker's sessions' sys.dm_exec_sessions.cpu_time (ms), found by the
  program name the worker's connection string gives them (APP=IDLE_APP); a session
  that logged in again or whose counter went down fails the scenario (bench.cost.spent).
Each per idle slot-second: over IDLE_SLOTS times the seconds between the two reads.

The bounds. relq.worker.idle states what an idle worker costs: at most
IDLE_CLAIMS_PER_S claim calls a second whatever its slot count, so at most
IDLE_CLAIMS_PER_S / IDLE_SLOTS calls per idle slot-second; allowed CALLS_SLACK more,
for a poll already under way at either read (one call at 10 a second over a 3-second
window is 3 %). CPU: at most CLAIM_CPU_MS of CPU per claim allowed, so
CLAIM_CPU_MS times the call bound per idle slot-second (at 16 slots, 3.125 ms, that is
50 ms of CPU a second for the whole worker, 5 % of one core): an empty claim is a few
index seeks on empty filtered indexes, well under a millisecond on a server core, and a
worker that claimed per slot (a long-poll re-running a claim every 100 ms in each slot)
would spend 16 times the calls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench.cost import Bound, CostResult, Measure, SessionCounters, Unreliable, spent
from relq import db
from relq.errors import RelqError

# The bound of relq.worker.idle: claim calls a second of an idle worker, whatever its slots.
from relq.worker.idle import IDLE_CLAIMS_PER_S

IDLE_SLOTS = 16
QUEUE = "SyncQueue"
CLAIM = f"Next_{QUEUE}_Batch_trx"
IDLE_APP = "relq-bench-idle"
CALLS_SLACK = 0.1  # over the stated call bound: a poll under way at either read of the counters
CLAIM_CPU_MS = 5.0  # CPU a claim may take on average, for the CPU bound
START_TIMEOUT_S = 60.0  # for every slot to make its first claim and join the idle gate
STOP_GRACE_S = 10.0

PROCEDURE_STATS = """
SELECT OBJECT_NAME(p.object_id, p.database_id) AS name, p.plan_handle, p.cached_time, p.execution_count,
    p.total_worker_time
FROM sys.dm_exec_procedure_stats AS p
WHERE p.database_id = DB_ID();
"""
SESSIONS = ("SELECT s.session_id, s.login_time, s.logical_reads, s.cpu_time FROM sys.dm_exec_sessions AS s "
            "WHERE s.program_name = ?;")


@dataclass(frozen=True)
class ProcedureStat:
    """One row of sys.dm_exec_procedure_stats: one cached plan of a procedure."""

    name: str
    cached_time: datetime
    executions: int
    worker_time_us: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ProcedureStat:
        return cls(str(row["name"]), row["cached_time"], int(row["execution_count"]),
                   int(row["total_worker_time"]))


def executions(before: Mapping[bytes, ProcedureStat], after: Mapping[bytes, ProcedureStat]) -> dict[str, int]:
    """Executions per procedure between two snapshots keyed by plan_handle. A plan cached
    after the first read counts whole (all its executions are since); a plan gone by the
    second read, or cached again (cached_time changed), or whose count went down, makes
    the count unknown: Unreliable, naming the procedure."""
    counted: dict[str, int] = {}
    for handle, old in before.items():
        new = after.get(handle)
        if new is None:
            raise Unreliable(f"the plan of dbo.{old.name} left the plan cache between the two reads: "
                             "its executions are unknown")
        if new.cached_time != old.cached_time or new.executions < old.executions:
            raise Unreliable(f"the statistics of dbo.{old.name} were reset between the two reads "
                             f"(cached {old.cached_time} -> {new.cached_time}, executions "
                             f"{old.executions:,} -> {new.executions:,})")
        counted[new.name] = counted.get(new.name, 0) + new.executions - old.executions
    for handle, new in after.items():
        if handle not in before:
            counted[new.name] = counted.get(new.name, 0) + new.executions
    return counted


def cpu_ms(before: Mapping[int, SessionCounters], after: Mapping[int, SessionCounters]) -> int:
    """The CPU ms the sessions spent between two snapshots keyed by session_id; Unreliable
    when one of them is gone, logged in again or was reset (bench.cost.spent)."""
    total = 0
    for session_id, old in before.items():
        total += spent(old, after.get(session_id, SessionCounters(session_id, None, 0, 0))).cpu_ms
    return total


@dataclass(frozen=True)
class IdleFigures:
    """What the idle worker cost between the two reads."""

    slots: int
    seconds: float
    claims: int  # calls of the claim procedure: the statements the worker sent
    executions: int  # every procedure execution, nested ones included
    cpu_ms: int
    sessions: int

    @property
    def slot_seconds(self) -> float:
        return self.slots * self.seconds


def call_bound(slots: int) -> float:
    """Claim calls per idle slot-second allowed: relq.worker.idle's bound, shared by the slots."""
    return IDLE_CLAIMS_PER_S / slots * (1 + CALLS_SLACK)


def cpu_bound(slots: int) -> float:
    """CPU ms per idle slot-second allowed."""
    return call_bound(slots) * CLAIM_CPU_MS


def idle_result(figures: IdleFigures, problems: list[str] | None = None) -> CostResult:
    """The scenario's result: its figures per idle slot-second, held to their bounds."""
    result = CostResult("idle", f"What does an idle worker of {figures.slots} slots cost the server?",
                        problems=list(problems or []))
    if figures.sessions < figures.slots:
        result.problems.append(f"{figures.sessions} sessions of the worker found, not {figures.slots}: its "
                               f"CPU is not all counted (does the driver send APP={IDLE_APP}?)")
    arm = f"{figures.slots} idle slots, {figures.seconds:.1f} s"
    result.measures.append(Measure(arm, f"claim calls (dbo.{CLAIM})", figures.claims, None, figures.cpu_ms))
    per = figures.slot_seconds
    rate = None if per <= 0 else figures.claims / per
    cpu = None if per <= 0 else figures.cpu_ms / per
    note = "" if per > 0 else "no time between the two reads"
    result.bounds = [
        Bound("statements (claim calls) per idle slot-second", rate, call_bound(figures.slots), "calls",
              note),
        Bound("CPU ms per idle slot-second", cpu, cpu_bound(figures.slots), "ms", note)]
    result.notes.append(f"{figures.executions:,} procedure executions in all (the claim's nested procedure "
                        f"included), {figures.claims:,} claim calls, {figures.cpu_ms:,} CPU ms over "
                        f"{per:,.0f} idle slot-seconds")
    return result


# -- measuring (live) -------------------------------------------------------------------------------


def _procedure_stats(cursor: Any) -> dict[bytes, ProcedureStat]:
    rows = db.query(cursor, PROCEDURE_STATS)
    return {bytes(r[1]): ProcedureStat.from_row({"name": r[0], "cached_time": r[2], "execution_count": r[3],
                                                 "total_worker_time": r[4]}) for r in rows}


def _sessions(cursor: Any) -> dict[int, SessionCounters]:
    rows = db.query(cursor, SESSIONS, IDLE_APP)
    return {int(r[0]): SessionCounters.from_row(int(r[0]), {"login_time": r[1], "logical_reads": r[2],
                                                            "cpu_time": r[3]}) for r in rows}


def with_app(conn_str: str, app: str = IDLE_APP) -> str:
    """The connection string with the application name (APP) set to ``app``."""
    pairs = [(k, v) for k, v in db.parse(conn_str) if k.casefold() not in ("app", "application name")]
    return db.build([*pairs, ("APP", app)])


def idle(conn_str: str, seconds: float, slots: int = IDLE_SLOTS) -> CostResult:
    """The idle scenario against the (empty) queue of the database ``conn_str`` names."""
    from relq.worker.cli import sql_connector
    from relq.worker.handlers import Handlers
    from relq.worker.runtime import Settings, Worker

    worker = Worker(Settings(queue=QUEUE, name="bench-idle", concurrency=slots), Handlers(),
                    sql_connector(with_app(conn_str), QUEUE))
    thread = threading.Thread(target=worker.run, name="bench-idle-worker", daemon=True)
    monitor = db.connect(conn_str)
    problems: list[str] = []
    try:
        cursor = monitor.cursor()
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while worker.idle.idle_slots() < slots or worker.idle.polls < 1:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RelqError(f"idle: the worker's {slots} slots did not all go idle within "
                                f"{START_TIMEOUT_S:.0f} s ({worker.failure or 'no failure reported'})")
            time.sleep(0.05)
        stats, sessions, started = _procedure_stats(cursor), _sessions(cursor), time.monotonic()
        time.sleep(seconds)
        stats_after, sessions_after, ended = _procedure_stats(cursor), _sessions(cursor), time.monotonic()
        try:
            counted = executions(stats, stats_after)
            cpu = cpu_ms(sessions, sessions_after)
        except Unreliable as exc:
            return CostResult("idle", f"What does an idle worker of {slots} slots cost the server?",
                              problems=[str(exc)])
        if worker.failure:
            problems.append(f"the worker failed: {worker.failure}")
        figures = IdleFigures(slots, ended - started, counted.get(CLAIM, 0), sum(counted.values()), cpu,
                              len(sessions))
        return idle_result(figures, problems)
    finally:
        worker.stop()
        thread.join(STOP_GRACE_S)
        monitor.close()

"""The scheduler a worker runs beside its slots: it enqueues the due slots of its queue's
recurring schedules (dbo.QueueSchedule), then sleeps a tick.

Each tick is one indexed read of the due schedules (dbo.QueueSchedule_V, the predicate of
IX_QueueSchedule_Due stated literally) and, for each, the fires of relq.cadence.plan, one
dbo.Fire_QueueSchedule_trx call each. Any number of schedulers may run, in one worker or in
many: the procedure's compare-and-set enqueues each slot once, and a scheduler that finds a
schedule moved on (Fired = 0) leaves that schedule to the one that moved it. There is no
leader to elect or lose. A random jitter on each tick spreads the workers' reads.

``run_once`` is one tick, for a SQL Server Agent job step or cron
(``python -m relq.worker --queue SyncQueue --schedule-once``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from relq import db
from relq.cadence import Cadence, plan
from relq.errors import Msg

log = logging.getLogger("relq.scheduler")

TICK_S = 1.0  # between two reads of the due schedules
JITTER_S = 0.25  # plus up to this, at random
RECONNECT_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # the pauses after failed ticks, the last one repeated
ERROR_TEXT = 500
# The due read: the server's time with the due rows, so that no worker's clock decides a slot.
DUE_SQL = (
    "SET NOCOUNT ON; DECLARE @Now DATETIME2(7) = SYSUTCDATETIME(); "
    "SELECT @Now AS [Now], v.[Name], v.CronExpr, v.IntervalSeconds, v.CatchUpMax, v.NextSlotAt "
    "FROM dbo.QueueSchedule_V AS v "
    "WHERE v.[Queue] = ? AND v.PausedAt IS NULL AND v.NextSlotAt <= @Now "
    "ORDER BY v.NextSlotAt;"
)


@dataclass(frozen=True)
class Due:
    """A due schedule as the read found it."""

    name: str
    cadence: Cadence
    catch_up: int | None  # None: Skip
    next_slot_at: datetime


@dataclass(frozen=True)
class Fired:
    """What one fire did: ``fired`` False when another scheduler had moved the schedule on."""

    name: str
    slot_at: datetime
    fired: bool
    next_slot_at: datetime | None
    enqueued_at: datetime | None = None
    duplicate: bool = False


class ScheduleStore(Protocol):
    """The two calls a scheduler makes, on one connection."""

    def due(self, queue: str) -> tuple[datetime | None, list[Due]]:
        """The server's now and the schedules of ``queue`` due by then (now is None when none)."""
        ...

    def fire(self, name: str, due_at: datetime, slot_at: datetime, next_slot_at: datetime) -> Fired: ...

    def close(self) -> None: ...


class SqlScheduleStore:
    """:class:`ScheduleStore` through relq.db on one pyodbc connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def due(self, queue: str) -> tuple[datetime | None, list[Due]]:
        with db.server_errors("dbo.QueueSchedule_V"):
            cursor = self.conn.cursor()
        try:
            rows = db.query(cursor, DUE_SQL, queue)
        finally:
            cursor.close()
        now = rows[0][0] if rows else None
        return now, [Due(name, Cadence(cron, interval), catch_up, next_slot)
                     for _, name, cron, interval, catch_up, next_slot in rows]

    def fire(self, name: str, due_at: datetime, slot_at: datetime, next_slot_at: datetime) -> Fired:
        result = db.call(self.conn, "dbo.Fire_QueueSchedule_trx", Name=name, DueAt=due_at, SlotAt=slot_at,
                         NextSlotAt=next_slot_at)
        row = dict(zip(result.columns[0], result.result_sets[0][0], strict=True))
        return Fired(name, slot_at, bool(row["Fired"]), row["NextSlotAt"], row["EnqueuedAt"],
                     bool(row["IsDuplicate"]))

    def close(self) -> None:
        self.conn.close()


def sql_store(conn_str: str, timeout_s: int = 30) -> Callable[[], ScheduleStore]:
    def connect() -> ScheduleStore:
        conn = db.connect(conn_str)
        conn.timeout = timeout_s
        return SqlScheduleStore(conn)

    return connect


class Scheduler:
    """Fires the due slots of one queue's schedules, tick after tick, until stopped."""

    def __init__(self, queue: str, connect: Callable[[], ScheduleStore], *, tick_s: float = TICK_S,
                 jitter_s: float = JITTER_S, rng: random.Random | None = None) -> None:
        self.queue = queue
        self.connect = connect
        self.tick_s, self.jitter_s = tick_s, jitter_s
        self.rng = rng or random.Random()
        self.stopping = threading.Event()
        self.fired = 0  # slots this scheduler enqueued
        self.lost = 0  # fires another scheduler got to first
        self._store: ScheduleStore | None = None
        self._thread: threading.Thread | None = None

    # -- one tick -----------------------------------------------------------------------------
    def run_once(self) -> list[Fired]:
        """Read the due schedules and fire their slots. A schedule whose fire the database
        refuses (removed meanwhile, a type no longer schedulable) is logged and passed over; a
        broken connection raises (db.SqlError) for the caller to reconnect."""
        store = self._connected()
        now, due = store.due(self.queue)
        done: list[Fired] = []
        for schedule in due:
            assert now is not None
            done += self._fire(store, schedule, now)
        return done

    def _fire(self, store: ScheduleStore, schedule: Due, now: datetime) -> list[Fired]:
        done: list[Fired] = []
        try:
            fires = plan(schedule.cadence, schedule.next_slot_at, now, schedule.catch_up)
        except Exception as exc:  # a row written by hand with a cron expression cronsim refuses
            self._log("plan-failed", schedule.name, schedule.next_slot_at, level=logging.ERROR,
                      error=_text(exc))
            return done
        for fire in fires:
            try:
                result = store.fire(schedule.name, fire.due_at, fire.slot_at, fire.next_slot_at)
            except db.SqlError as exc:
                if exc.broken:
                    raise
                self._log("fire-refused", schedule.name, fire.slot_at, error=_text(exc),
                          level=logging.ERROR if exc.number != Msg.ScheduleNotFound else logging.INFO)
                break
            done.append(result)
            if not result.fired:  # another scheduler moved it on: the rest of its slots are its
                self.lost += 1
                self._log("fired-elsewhere", schedule.name, fire.slot_at)
                break
            self.fired += 1
            self._log("fired", schedule.name, fire.slot_at, enqueued_at=result.enqueued_at,
                      duplicate=result.duplicate or None,
                      skipped_from=fire.due_at if fire.slot_at != fire.due_at else None)
        return done

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> None:
        """Tick until :meth:`stop`; a failed tick closes the connection and the next one opens
        another after a growing pause."""
        failures = 0
        while not self.stopping.is_set():
            try:
                self.run_once()
                failures = 0
                pause = self.tick_s + self.rng.uniform(0, self.jitter_s)
            except Exception as exc:
                self._close()
                pause = RECONNECT_S[min(failures, len(RECONNECT_S) - 1)]
                failures += 1
                log.error(json.dumps({"queue": self.queue, "event": "scheduler-failed", "retry_s": pause,
                                      "error": _text(exc)}))
            self.stopping.wait(pause)
        self._close()

    def start(self) -> Scheduler:
        self._thread = threading.Thread(target=self.run, daemon=True, name="relq-scheduler")
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)  # the loop closes its connection as it ends
        else:
            self._close()

    def _connected(self) -> ScheduleStore:
        if self._store is None:
            self._store = self.connect()
        return self._store

    def _close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):  # a broken connection may refuse to close
                store.close()

    def _log(self, event: str, name: str, slot_at: datetime, *, level: int = logging.INFO,
             **more: Any) -> None:
        line = {"queue": self.queue, "event": event, "schedule": name, "slot": slot_at.isoformat()}
        line.update({k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in more.items()
                     if v is not None})
        log.log(level, json.dumps(line))


def _text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:ERROR_TEXT]

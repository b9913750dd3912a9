"""relq.worker.scheduler against an in-memory database that keeps dbo.Fire_QueueSchedule_trx's
contract: the compare-and-set on NextSlotAt under one lock (the row's), and the job enqueued in
the same step (offline)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from relq import db
from relq.cadence import Cadence
from relq.errors import Msg
from relq.worker import cli
from relq.worker import scheduler as scheduler_module
from relq.worker.scheduler import DUE_SQL, Due, Fired, Scheduler, SqlScheduleStore

T0 = datetime(2026, 11, 28, 12, 0, 0)


@dataclass
class Row:
    name: str
    queue: str
    cadence: Cadence
    next_slot_at: datetime
    catch_up: int | None = None
    paused: bool = False


@dataclass
class Database:
    """The schedules and the jobs they enqueued, shared by every connection."""

    now: datetime = T0
    rows: dict[str, Row] = field(default_factory=dict)
    jobs: list[tuple[str, datetime]] = field(default_factory=list)  # (schedule, slot) per enqueue
    lock: threading.Lock = field(default_factory=threading.Lock)
    refuse: dict[str, db.SqlError] = field(default_factory=dict)  # a schedule's fire refused so


class Connection:
    """One scheduler's connection: :class:`relq.worker.scheduler.ScheduleStore` in memory."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.closed = False
        self.due_reads = 0

    def due(self, queue: str) -> tuple[datetime | None, list[Due]]:
        self.due_reads += 1
        d = self.database
        with d.lock:
            rows = sorted((r for r in d.rows.values()
                           if r.queue == queue and not r.paused and r.next_slot_at <= d.now),
                          key=lambda r: r.next_slot_at)
            return (d.now if rows else None), [Due(r.name, r.cadence, r.catch_up, r.next_slot_at)
                                               for r in rows]

    def fire(self, name: str, due_at: datetime, slot_at: datetime, next_slot_at: datetime) -> Fired:
        d = self.database
        if name in d.refuse:
            raise d.refuse[name]
        assert due_at <= slot_at < next_slot_at and slot_at <= d.now  # the procedure's own checks
        with d.lock:  # the row's lock: the compare and the set are one step
            row = d.rows.get(name)
            if row is None:
                missing = f"there is no schedule named {name}"
                raise db.SqlError([db.ServerMessage(Msg.ScheduleNotFound, missing, "42000")])
            if row.next_slot_at != due_at or row.paused:
                return Fired(name, slot_at, False, row.next_slot_at)
            row.next_slot_at = next_slot_at
            d.jobs.append((name, slot_at))
            return Fired(name, slot_at, True, next_slot_at, slot_at)

    def close(self) -> None:
        self.closed = True


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


def test_two_schedulers_racing_enqueue_each_slot_once_and_skip_none() -> None:
    database = Database(rows={"beat": Row("beat", "SyncQueue", Cadence(interval_s=1), T0)})
    schedulers = [Scheduler("SyncQueue", lambda: Connection(database)) for _ in range(2)]
    for tick in range(60):
        database.now = seconds(tick + 0.5)
        start = threading.Barrier(2)

        def race(scheduler: Scheduler, start: threading.Barrier = start) -> None:
            start.wait()
            scheduler.run_once()

        threads = [threading.Thread(target=race, args=(s,)) for s in schedulers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    slots = [slot for _, slot in database.jobs]
    assert sorted(slots) == [seconds(n) for n in range(60)]  # each second once, none missing
    assert sum(s.fired for s in schedulers) == 60


def test_a_scheduler_that_loses_the_compare_and_set_stops_that_schedule() -> None:
    database = Database(now=seconds(10.5), rows={
        "beat": Row("beat", "SyncQueue", Cadence(interval_s=1), T0, catch_up=5)})
    behind = Connection(database)
    now, due = behind.due("SyncQueue")  # read before the other scheduler fires
    Scheduler("SyncQueue", lambda: Connection(database)).run_once()
    late = Scheduler("SyncQueue", lambda: behind)
    assert late._fire(behind, due[0], now) == [Fired("beat", seconds(6), False, seconds(11))]
    assert late.lost == 1 and late.fired == 0
    assert [slot for _, slot in database.jobs] == [seconds(n) for n in range(6, 11)]


def test_skip_after_downtime_enqueues_only_the_latest_slot() -> None:
    database = Database(now=seconds(600.2),
                        rows={"beat": Row("beat", "SyncQueue", Cadence(interval_s=60), T0)})
    done = Scheduler("SyncQueue", lambda: Connection(database)).run_once()
    assert database.jobs == [("beat", seconds(600))]
    assert database.rows["beat"].next_slot_at == seconds(660)
    assert [d.fired for d in done] == [True]


def test_catch_up_after_downtime_enqueues_the_latest_n_slots() -> None:
    database = Database(now=seconds(600.2), rows={
        "beat": Row("beat", "SyncQueue", Cadence(cron="*/2 * * * *"), T0, catch_up=3)})
    Scheduler("SyncQueue", lambda: Connection(database)).run_once()
    assert database.jobs == [("beat", seconds(360)), ("beat", seconds(480)), ("beat", seconds(600))]
    assert database.rows["beat"].next_slot_at == seconds(720)


def test_only_the_queues_own_due_and_running_schedules_fire() -> None:
    database = Database(now=seconds(5), rows={
        "mine": Row("mine", "SyncQueue", Cadence(interval_s=10), T0),
        "later": Row("later", "SyncQueue", Cadence(interval_s=10), seconds(6)),
        "paused": Row("paused", "SyncQueue", Cadence(interval_s=10), T0, paused=True),
        "other": Row("other", "OtherQueue", Cadence(interval_s=10), T0)})
    Scheduler("SyncQueue", lambda: Connection(database)).run_once()
    assert database.jobs == [("mine", T0)]


def test_a_refused_fire_is_logged_and_the_other_schedules_still_fire(caplog) -> None:
    database = Database(now=seconds(1), rows={
        "bad": Row("bad", "SyncQueue", Cadence(interval_s=10), T0),
        "good": Row("good", "SyncQueue", Cadence(interval_s=10), seconds(1))})
    database.refuse["bad"] = db.SqlError([db.ServerMessage(Msg.NotSchedulable, "queue SyncQueue cannot take "
                                                           "scheduled jobs of type Gone", "42000")])
    with caplog.at_level(logging.INFO, logger="relq.scheduler"):
        Scheduler("SyncQueue", lambda: Connection(database)).run_once()
    assert database.jobs == [("good", seconds(1))]
    assert any('"event": "fire-refused"' in r.message and '"schedule": "bad"' in r.message
               for r in caplog.records)


def test_a_schedule_whose_cron_cronsim_refuses_is_passed_over() -> None:
    database = Database(now=seconds(1), rows={
        "hand": Row("hand", "SyncQueue", Cadence(cron="61 * * * *"), T0),
        "good": Row("good", "SyncQueue", Cadence(interval_s=10), seconds(1))})
    Scheduler("SyncQueue", lambda: Connection(database)).run_once()
    assert database.jobs == [("good", seconds(1))]


def test_a_broken_connection_ends_the_tick_for_a_new_connection() -> None:
    database = Database(now=seconds(1), rows={"beat": Row("beat", "SyncQueue", Cadence(interval_s=10), T0)})
    broken = db.ServerMessage(10054, "TCP Provider: Error code 0x2746", "08S01")
    database.refuse["beat"] = db.SqlError([broken])
    with pytest.raises(db.SqlError):
        Scheduler("SyncQueue", lambda: Connection(database)).run_once()


def test_the_loop_reconnects_after_a_failed_tick_and_stops_when_asked(monkeypatch) -> None:
    database = Database(now=seconds(1), rows={"beat": Row("beat", "SyncQueue", Cadence(interval_s=1), T0)})
    opened: list[Connection] = []

    def connect() -> Connection:
        if not opened:
            opened.append(Connection(database))
            raise db.SqlError([db.ServerMessage(None, "Login timeout expired", "HYT00")])
        connection = Connection(database)
        opened.append(connection)
        return connection

    monkeypatch.setattr(scheduler_module, "RECONNECT_S", (0.0,))
    scheduler = Scheduler("SyncQueue", connect, tick_s=0.0, jitter_s=0.0)
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        if len(waits) >= 3:
            scheduler.stopping.set()
        return scheduler.stopping.is_set()

    monkeypatch.setattr(scheduler.stopping, "wait", wait)
    scheduler.run()
    assert len(opened) == 2  # the first connect failed, the second served the later ticks
    assert database.jobs == [("beat", seconds(1))]  # skip: the latest slot, then nothing due
    assert opened[1].due_reads == 2
    assert opened[1].closed  # closed as the loop ended


class Cursor:
    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows
        self.executed: list[tuple] = []
        self.description = [("x",)]

    def execute(self, sql: str, *params: object) -> None:
        self.executed.append((sql, params))

    def fetchall(self) -> list[tuple]:
        return self.rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        pass


def test_the_due_read_states_the_filtered_index_predicate_and_reads_the_server_clock() -> None:
    assert "v.PausedAt IS NULL" in DUE_SQL and "SYSUTCDATETIME()" in DUE_SQL
    assert "ORDER BY v.NextSlotAt" in DUE_SQL
    cursor = Cursor([(seconds(3), "beat", None, 5, None, T0)])

    class Conn:
        def cursor(self) -> Cursor:
            return cursor

    now, due = SqlScheduleStore(Conn()).due("SyncQueue")
    assert now == seconds(3)
    assert due == [Due("beat", Cadence(interval_s=5), None, T0)]
    assert cursor.executed == [(DUE_SQL, ("SyncQueue",))]


def test_schedule_once_runs_one_tick_and_says_what_it_did(monkeypatch, capsys) -> None:
    database = Database(now=seconds(2.5), rows={"beat": Row("beat", "SyncQueue", Cadence(interval_s=1), T0)})
    monkeypatch.setattr(cli, "sql_store", lambda conn_str: lambda: Connection(database))
    code = cli.main(["--queue", "SyncQueue", "--schedule-once"], conn="Driver={x};Server=s;PWD=secret")
    assert code == 0
    err = capsys.readouterr().err
    assert "SyncQueue: 1 slot(s) enqueued" in err and "secret" not in err
    assert database.jobs == [("beat", seconds(2))]  # skip: the latest of the three


def test_schedule_once_refuses_a_queue_name_that_is_no_identifier(capsys) -> None:
    assert cli.main(["--queue", "Sync Queue", "--schedule-once"], conn="Driver={x};Server=s") == 1
    assert "scheduler: queue 'Sync Queue' does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("args, runs", [([], True), (["--no-scheduler"], False)])
def test_a_worker_runs_its_queues_scheduler_unless_told_not_to(monkeypatch, args, runs) -> None:
    from relq.worker.handlers import Handlers

    events: list[str] = []

    class Recorder:
        def __init__(self, queue: str, connect: object) -> None:
            events.append(f"made {queue}")

        def start(self) -> Recorder:
            events.append("started")
            return self

        def stop(self) -> None:
            events.append("stopped")

    monkeypatch.setattr(cli, "Scheduler", Recorder)
    monkeypatch.setattr(cli, "sql_connector", lambda conn_str, queue_name: object())
    monkeypatch.setattr(cli, "load_handlers", lambda queue_name, modules: Handlers())
    monkeypatch.setattr(cli, "run_worker", lambda settings, handlers, connect: events.append("worked") or
                        cli.Worker(settings, handlers, connect))
    assert cli.main(["--queue", "SyncQueue", *args], conn="DRIVER=x;SERVER=h") == 0
    assert events == (["made SyncQueue", "started", "worked", "stopped"] if runs else ["worked"])

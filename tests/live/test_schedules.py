"""Recurring schedules against a real SQL Server: two schedulers racing for 60 s on an interval
of 1 s enqueue each slot exactly once and skip none, with READ_COMMITTED_SNAPSHOT off and on
(dbo.Fire_QueueSchedule_trx's compare-and-set); the misfire policies after a time without
schedulers; pause, resume and remove as a QueueAdmin member, and the fire as a QueueWorker
member, who reaches Add_SyncQueue_utx only through the procedure (ownership chaining)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from relq import db, schedules
from relq.errors import Msg
from relq.worker.scheduler import Scheduler, SqlScheduleStore
from tests.conftest import RCSI, REPO

pytestmark = pytest.mark.mssql

JOB_TYPE = "RelqScheduleBeat"
PREFIX = "relq-live-"
RACE_S = 60


def prepare(conn: Any) -> None:
    """As dbo: this module's job type, and none of its jobs or schedules left from before."""
    db.run_batch(conn.cursor(), f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
        DELETE FROM dbo.QueueSchedule WHERE [Name] LIKE N'{PREFIX}%';
    """)


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Callable[[], Any]]:
    opened: list[Any] = []

    def connect(database: str = live_database) -> Any:
        conn = db.connect(db.with_database(mssql.conn_str, database))
        opened.append(conn)
        return conn

    prepare(connect())
    yield connect
    for conn in opened:
        conn.close()


def slots_enqueued(conn: Any, name: str) -> list[datetime]:
    """The slot of every job the schedule enqueued, read from its DedupKey, in key order."""
    sql = ("SELECT q.DedupKey FROM dbo.SyncQueue AS q WHERE q.[Type] = ? AND q.DedupKey LIKE ? "
           "ORDER BY q.EnqueuedAt;")
    rows = db.query(conn.cursor(), sql, JOB_TYPE, f"schedule:{name}@%")
    return [datetime.fromisoformat(key.partition("@")[2].partition(".")[0]) for (key,) in rows]


def schedule_row(conn: Any, name: str) -> dict[str, Any]:
    return next(r for r in schedules.read(conn) if r["Name"] == name)


def add(conn: Any, name: str, *, every: int, catch_up: int | None = None) -> dict[str, Any]:
    return schedules.add(conn, schedules.new_schedule(name, "SyncQueue", JOB_TYPE, every=every,
                                                      payload='{"beat": true}', catch_up=catch_up))


@RCSI
def test_two_schedulers_racing_for_60_s_enqueue_each_slot_once_and_skip_none(mssql, rcsi: bool,
                                                                             request) -> None:
    name = f"{PREFIX}race"
    database = request.getfixturevalue("rcsi_database" if rcsi else "live_database")
    conn_str = db.with_database(mssql.conn_str, database)
    admin = db.connect(conn_str)
    try:
        prepare(admin)
        # CatchUp: a scheduler held up for a few seconds (a pause of the test machine) enqueues the
        # slots it missed, so that "none skipped" is the compare-and-set's doing, not luck's.
        first = add(admin, name, every=1, catch_up=1000)["NextSlotAt"]

        def connect() -> SqlScheduleStore:
            return SqlScheduleStore(db.connect(conn_str))

        racers = [Scheduler("SyncQueue", connect, tick_s=0.05, jitter_s=0.05).start() for _ in range(2)]
        time.sleep(RACE_S)
        for racer in racers:
            racer.stop()
        row = schedule_row(admin, name)
        slots = slots_enqueued(admin, name)
    finally:
        admin.close()
    assert slots, "no slot was enqueued"
    assert len(slots) == len(set(slots)), "a slot was enqueued twice"
    expected = [first + timedelta(seconds=n) for n in range(len(slots))]
    assert sorted(slots) == expected, "a slot was skipped"
    # Each job came from a fire that won its compare-and-set, none from the DedupKey's catch.
    assert sum(r.fired for r in racers) == len(slots)
    assert row["LastSlotAt"] == slots[-1] and row["NextSlotAt"] == slots[-1] + timedelta(seconds=1)


def test_skip_enqueues_only_the_latest_missed_slot(dbo, member) -> None:
    conn = dbo()
    name = f"{PREFIX}skip"
    add(conn, name, every=60)
    # ten minutes without schedulers
    db.run_batch(conn.cursor(), f"UPDATE dbo.QueueSchedule SET NextSlotAt = DATEADD(MINUTE, -10, NextSlotAt) "
                                f"WHERE [Name] = N'{name}';")
    missed_from = schedule_row(conn, name)["NextSlotAt"]
    worker = member("QueueWorker")
    scheduler = Scheduler("SyncQueue", lambda: SqlScheduleStore(worker()))
    done = scheduler.run_once()
    scheduler.stop()
    now = db.query(conn.cursor(), "SELECT SYSUTCDATETIME();")[0][0]
    slots = slots_enqueued(conn, name)
    row = schedule_row(conn, name)
    assert len(slots) == 1 and [d.fired for d in done] == [True]
    assert slots[0] >= missed_from + timedelta(minutes=9)  # the latest one: 9 or 10 intervals on
    assert (slots[0] - missed_from) % timedelta(minutes=1) == timedelta(0)
    assert slots[0] <= now < row["NextSlotAt"] == slots[0] + timedelta(minutes=1)


def test_catch_up_enqueues_the_latest_n_missed_slots_oldest_first(dbo, member) -> None:
    conn = dbo()
    name = f"{PREFIX}catch-up"
    add(conn, name, every=60, catch_up=3)
    db.run_batch(conn.cursor(), f"UPDATE dbo.QueueSchedule SET NextSlotAt = DATEADD(MINUTE, -10, NextSlotAt) "
                                f"WHERE [Name] = N'{name}';")
    worker = member("QueueWorker")
    scheduler = Scheduler("SyncQueue", lambda: SqlScheduleStore(worker()))
    scheduler.run_once()
    scheduler.stop()
    now = db.query(conn.cursor(), "SELECT SYSUTCDATETIME();")[0][0]
    slots = slots_enqueued(conn, name)
    assert len(slots) == 3
    assert [b - a for a, b in itertools.pairwise(slots)] == [timedelta(minutes=1)] * 2
    assert slots[-1] <= now < slots[-1] + timedelta(minutes=1)
    assert schedule_row(conn, name)["NextSlotAt"] == slots[-1] + timedelta(minutes=1)


def test_a_second_fire_of_a_slot_enqueues_nothing_and_raises_nothing(dbo) -> None:
    conn = dbo()
    name = f"{PREFIX}twice"
    due = add(conn, name, every=5)["NextSlotAt"]
    time.sleep(0.01)  # the first slot is the server's now cut to the second: due already
    calls = [db.call(conn, "dbo.Fire_QueueSchedule_trx", Name=name, DueAt=due, SlotAt=due,
                     NextSlotAt=due + timedelta(seconds=5)) for _ in range(2)]
    fired = [dict(zip(c.columns[0], c.result_sets[0][0], strict=True)) for c in calls]
    assert [f["Fired"] for f in fired] == [True, False]
    assert fired[0]["EnqueuedAt"] is not None and fired[1]["EnqueuedAt"] is None
    assert fired[1]["NextSlotAt"] == due + timedelta(seconds=5)
    assert slots_enqueued(conn, name) == [due]


def test_pause_resume_and_remove_as_a_queue_admin(dbo, member) -> None:
    conn = dbo()
    admin = member("QueueAdmin")()
    name = f"{PREFIX}paused"
    add(admin, name, every=1)
    paused = db.call(admin, "dbo.Pause_QueueSchedule_trx", Name=name)
    paused_row = dict(zip(paused.columns[0], paused.result_sets[0][0], strict=True))
    assert paused_row["PausedAt"] is not None and paused_row["PausedBy"]
    time.sleep(1.1)  # a slot passes while paused
    scheduler = Scheduler("SyncQueue", lambda: SqlScheduleStore(dbo()))
    assert [d for d in scheduler.run_once() if d.name == name] == []
    # `invoke schedule.resume` gives the first slot from now on: the paused time's slots are skipped
    resumed = schedules.resume(admin, name)
    now = db.query(conn.cursor(), "SELECT SYSUTCDATETIME();")[0][0]
    assert resumed["PausedAt"] is None and resumed["NextSlotAt"] >= now - timedelta(seconds=1)
    assert slots_enqueued(conn, name) == []
    later = resumed["NextSlotAt"] + timedelta(hours=1)
    again = db.call(admin, "dbo.Resume_QueueSchedule_trx", Name=name, NextSlotAt=later)
    assert dict(zip(again.columns[0], again.result_sets[0][0], strict=True))["NextSlotAt"] == later
    db.call(admin, "dbo.Delete_QueueSchedule_trx", Name=name)
    assert [r for r in schedules.read(conn) if r["Name"] == name] == []
    with pytest.raises(db.SqlError) as gone:
        db.call(admin, "dbo.Delete_QueueSchedule_trx", Name=name)
    assert gone.value.number == Msg.ScheduleNotFound
    scheduler.stop()


def test_a_custom_queue_and_a_taken_name_are_refused(dbo) -> None:
    conn = dbo()
    with pytest.raises(db.SqlError) as custom:
        db.call(conn, "dbo.Add_QueueSchedule_trx", Name=f"{PREFIX}mail", Queue="Notification",
                Type="ResetPassword", IntervalSeconds=60)
    assert custom.value.number == Msg.NotSchedulable
    add(conn, f"{PREFIX}taken", every=60)
    with pytest.raises(db.SqlError) as taken:
        add(conn, f"{PREFIX}taken", every=60)
    assert taken.value.number == Msg.ScheduleExists


def test_a_worker_fires_but_may_not_add_pause_or_remove_a_schedule(dbo, member) -> None:
    dbo()
    worker = member("QueueWorker")()
    for procedure, params in (("dbo.Add_QueueSchedule_trx", {"Name": f"{PREFIX}nope", "Queue": "SyncQueue",
                                                             "Type": JOB_TYPE, "IntervalSeconds": 60}),
                              ("dbo.Pause_QueueSchedule_trx", {"Name": f"{PREFIX}nope"}),
                              ("dbo.Delete_QueueSchedule_trx", {"Name": f"{PREFIX}nope"})):
        with pytest.raises(db.SqlError) as denied:
            db.call(worker, procedure, **params)
        assert denied.value.number == 229, procedure  # The EXECUTE permission was denied
    # and reads the schedules (the scheduler's read): a denied SELECT raises 229
    assert len(db.query(worker.cursor(), "SELECT COUNT(*) FROM dbo.QueueSchedule_V;")) == 1


def test_schedule_once_from_a_shell_enqueues_the_due_slot_and_exits(dbo, mssql, live_database: str) -> None:
    """The Agent-job step of docs/schedules.md: one tick in a process of its own, then exit 0."""
    conn = dbo()
    name = f"{PREFIX}agent"
    due = add(conn, name, every=3600)["NextSlotAt"]
    env = dict(os.environ, RELQ_MSSQL=db.with_database(mssql.conn_str, live_database), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "relq.worker", "--queue", "SyncQueue", "--schedule-once"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "SyncQueue: " in done.stderr and "slot(s) enqueued" in done.stderr
    assert slots_enqueued(conn, name) == [due]
    assert schedule_row(conn, name)["NextSlotAt"] == due + timedelta(hours=1)

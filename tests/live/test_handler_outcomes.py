"""A handler's own outcomes against a real SQL Server, through the worker and the real
Modify_: a snooze brings the item back after its delay by the server's clock without
spending an attempt (one attempt allowed, so a spent one would fail it); a cancel ends
it Cancelled with its reason; and an operator's Cancel_ while the handler runs reaches
the handler through Item.lost, from the worker's lease renewals, and its late result is
refused."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from relq import db
from relq.deploy.apply import deploy
from relq.worker.cli import sql_connector
from relq.worker.handlers import Cancel, Handlers, Item, Snooze
from relq.worker.runtime import Settings, Worker
from tests.conftest import REPO
from tests.live.jobs import enqueue_jobs

pytestmark = pytest.mark.mssql

DEADLINE_S = 120
SNOOZE_S = 3
LEASE_S = 3  # renewed every second: Item.lost is at most that late

SETTINGS = f"""
MERGE dbo.AppSettings AS target
USING (VALUES ('syncqueue.maxAttempts', 1), ('syncqueue.leaseSeconds', {LEASE_S})) AS source(Param, ValInt)
    ON target.Param = source.Param
WHEN MATCHED THEN UPDATE SET ValInt = source.ValInt
WHEN NOT MATCHED THEN INSERT (Param, ValInt) VALUES (source.Param, source.ValInt);
"""


def until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def item_of(cursor, entity: str) -> tuple:
    return tuple(db.query(cursor, "SELECT [Status], AttemptNum, Response FROM dbo.SyncQueue "
                                  "WHERE EntityKey = ?;", entity)[0])


def attempts_of(cursor, entity: str) -> list[tuple]:
    return [tuple(r) for r in db.query(cursor, """
        SELECT a.StartedAt, a.AttemptNum, a.Outcome, a.Response
        FROM dbo.SyncQueueAttempt AS a INNER JOIN dbo.SyncQueue AS q ON q.EnqueuedAt = a.EnqueuedAt
        WHERE q.EntityKey = ? ORDER BY a.StartedAt;""", entity)]


def test_a_handler_snoozes_cancels_and_learns_of_an_operators_cancel(mssql, new_database) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    admin = db.connect(conn_str)
    cursor = admin.cursor()
    db.run_batch(cursor, SETTINGS)
    runs: list[str] = []
    in_long_job, told = threading.Event(), []
    handlers = Handlers()

    @handlers.register("SyncQueue", "CustomerSync")
    def handle(item: Item) -> str | Snooze | Cancel:
        entity = item.fields["EntityKey"]
        runs.append(entity)
        if entity == "later":
            return Snooze(SNOOZE_S) if runs.count(entity) == 1 else "synced later"
        if entity == "unwanted":
            return Cancel("the customer was deleted")
        in_long_job.set()  # "long": waits until the worker says the item is no longer its own
        deadline = time.monotonic() + DEADLINE_S
        while item.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        told.append(item.lost)
        return "too late"

    worker = Worker(Settings("SyncQueue", "outcomes", grace_s=10), handlers,
                    sql_connector(conn_str, "SyncQueue"))
    thread = threading.Thread(target=worker.run, daemon=True)
    try:
        enqueue_jobs(admin, "CustomerSync", "later", "unwanted")
        thread.start()
        until(lambda: item_of(cursor, "later")[0] == "Completed", "the snoozed item to complete")
        until(lambda: item_of(cursor, "unwanted")[0] == "Cancelled", "the handler's cancel")

        enqueue_jobs(admin, "CustomerSync", "long")
        assert in_long_job.wait(DEADLINE_S), "the worker never claimed the long job"
        key = db.query(cursor, "SELECT EnqueuedAt FROM dbo.SyncQueue WHERE EntityKey = N'long';")[0][0]
        db.call(admin, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=key)
        until(lambda: told, "the handler to learn of the cancel")
        until(lambda: worker.stats.summary()["lost"] == 1, "the late result to be dropped")
    finally:
        worker.stop()
        thread.join(DEADLINE_S)
        admin.close()

    cursor = db.connect(conn_str).cursor()
    first, second = attempts_of(cursor, "later")
    assert (first[1:3], second[1:3]) == ((1, "Pending"), (1, "Completed"))  # the attempt given back
    assert first[3] == f"snoozed for {SNOOZE_S} s"
    assert second[0] - first[0] >= timedelta(seconds=SNOOZE_S)  # claimed again only when due
    assert item_of(cursor, "later") == ("Completed", 1, "synced later")
    assert item_of(cursor, "unwanted")[0::2] == ("Cancelled", "the customer was deleted")
    assert [a[2] for a in attempts_of(cursor, "unwanted")] == ["Cancelled"]
    assert told[0]  # why, as the renewal's refusal said it
    assert item_of(cursor, "long")[0] == "Cancelled"  # the handler's "too late" was refused
    assert [a[2] for a in attempts_of(cursor, "long")] == ["Cancelled"]
    summary = worker.stats.summary()
    assert (summary["snoozed"], summary["cancelled"], summary["completed"], summary["lost"]) == (1, 1, 1, 1)
    assert worker.failure is None

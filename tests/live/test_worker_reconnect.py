"""A worker whose session is killed while its handler runs, against a real SQL Server.
The server closes the connection (KILL), so the worker's report fails with a broken
link; the worker opens a new connection and makes the same report again. The item
completes once, in one attempt, and the worker goes on working. (Microsoft's ODBC
driver may reconnect on its own first, its connection resiliency: the outcome is the
same, and only with FreeTDS does the test insist that relq's own retry ran.)

KILL needs ALTER ANY CONNECTION (the live tier's login is a sysadmin)."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from relq import db
from relq.deploy.apply import deploy
from relq.worker.cli import sql_connector
from relq.worker.handlers import Handlers, Item
from relq.worker.runtime import Settings, Worker
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

DEADLINE_S = 120


def enqueue(cursor, entity: str) -> None:
    assert entity.isidentifier()  # it goes into the batch as a literal
    db.run_batch(cursor, f"""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, 'CustomerSync', N'{entity}');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)


# The sessions of this database but the test's own: the worker's (its one slot, and any
# connection it has closed that the driver manager still pools).
OTHER_SESSIONS = """
SELECT s.session_id
FROM sys.dm_exec_sessions AS s
WHERE s.database_id = DB_ID() AND s.session_id <> @@SPID AND s.is_user_process = 1;
"""


def status_of(cursor, entity: str) -> tuple:
    return tuple(db.query(cursor, "SELECT [Status], AttemptNum, Response FROM dbo.SyncQueue "
                                  "WHERE EntityKey = ?;", entity)[0])


def until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_worker_whose_session_is_killed_mid_item_reports_on_a_new_connection(
    mssql, new_database, caplog
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    admin = db.connect(conn_str)
    cursor = admin.cursor()
    in_handler, go_on, runs = threading.Event(), threading.Event(), []
    handlers = Handlers()

    @handlers.register("SyncQueue", "CustomerSync")
    def held(item: Item) -> str:
        runs.append(item.fields["EntityKey"])
        if item.fields["EntityKey"] == "first":
            in_handler.set()
            go_on.wait(DEADLINE_S)
        return f"synced {item.fields['EntityKey']}"

    worker = Worker(Settings("SyncQueue", "reconnect", grace_s=10, type="CustomerSync"),
                    handlers, sql_connector(conn_str, "SyncQueue"))
    thread = threading.Thread(target=worker.run, daemon=True)
    caplog.set_level(logging.INFO, logger="relq.worker")
    try:
        enqueue(cursor, "first")
        thread.start()
        assert in_handler.wait(DEADLINE_S), "the worker never claimed the item"
        sessions = [spid for (spid,) in db.query(cursor, OTHER_SESSIONS)]
        assert sessions, "the worker's session was not found"
        for spid in sessions:
            db.run_batch(cursor, f"KILL {int(spid)};")
        # gone, not only in the kill state (a call then would meet 596 rather than a closed link)
        until(lambda: not db.query(cursor, OTHER_SESSIONS), "the killed sessions to end")
        go_on.set()  # the handler returns; its report meets the closed connection

        until(lambda: status_of(cursor, "first")[0] == "Completed", "the item to complete")
        assert status_of(cursor, "first") == ("Completed", 1, "synced first")
        if "freetds" in conn_str.casefold():  # the report met the broken link (Microsoft's driver
            assert '"event": "call-failed"' in caplog.text  # may reconnect first: connection resiliency)

        enqueue(cursor, "second")  # the worker goes on, on its new connection
        until(lambda: status_of(cursor, "second")[0] == "Completed", "the next item to complete")
        attempts = db.query(cursor, "SELECT a.Outcome FROM dbo.SyncQueueAttempt AS a JOIN dbo.SyncQueue AS q "
                                    "ON q.EnqueuedAt = a.EnqueuedAt WHERE q.EntityKey = N'first';")
        assert attempts == [("Completed",)]
    finally:
        go_on.set()
        worker.stop()
        thread.join(DEADLINE_S)
        admin.close()
    assert runs == ["first", "second"]  # the killed item's handler ran once
    assert worker.failure is None

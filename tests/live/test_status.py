"""`invoke status` against a real SQL Server: the health views answer, their figures
follow what the queue holds, and only the unfinished states are counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from relq import db, status
from tests.conftest import REPO

pytestmark = pytest.mark.mssql


def test_status_reads_every_queue_and_counts_a_new_item(mssql, live_database: str) -> None:
    conn_str = db.with_database(mssql.conn_str, live_database)
    conn = db.connect(conn_str)
    try:
        started = time.monotonic()
        before = {q.queue: q for q in status.read(conn)}
        assert {"Notification", "SyncQueue"} <= set(before)
        db.run_batch(conn.cursor(), """
            SET NOCOUNT ON;
            DECLARE @Items dbo.SyncQueueItemList;
            INSERT INTO @Items (ItemNo, [Type], EntityKey, ScheduledFor)
            VALUES (1, 'InventorySync', N'status-test', DATEADD(DAY, 1, SYSUTCDATETIME()));
            EXEC dbo.Add_SyncQueue_trx @Items = @Items;
        """)
        after = {q.queue: q for q in status.read(conn)}
        elapsed = time.monotonic() - started
    finally:
        conn.close()
    assert after["SyncQueue"].items["Pending"] == before["SyncQueue"].items["Pending"] + 1
    # A row per unfinished state, whatever the queues hold; finished items are never counted.
    for q in after.values():
        assert set(q.items) == set(status.UNFINISHED), q
    # Not due: no alarm. Other modules' due items in the session's database age meanwhile
    # (whole seconds, so by at most the time between the two reads, plus one).
    oldest, now = before["SyncQueue"].oldest_due_s, after["SyncQueue"].oldest_due_s
    if oldest is None:  # an item backing off may come due between the reads
        assert now is None or now <= elapsed + 1
    else:
        assert now is not None and oldest <= now <= oldest + elapsed + 1

    shown = subprocess.run([sys.executable, "-m", "invoke", "status", "--json"], cwd=REPO,
                           capture_output=True, text=True, check=False,
                           env={**os.environ, "RELQ_MSSQL": conn_str})
    assert shown.returncode == 0, shown.stderr
    assert {q["queue"] for q in json.loads(shown.stdout)} >= {"Notification", "SyncQueue"}


def test_the_health_view_counts_what_the_queue_holds_unfinished_and_nothing_finished(
        mssql, live_database: str) -> None:
    """On the real filtered health index: a finished item exists, and the view's counts are
    the table's own count of each unfinished state, read in the same transaction."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    try:
        cursor = conn.cursor()
        db.run_batch(cursor, """
            SET NOCOUNT ON;
            DECLARE @Items dbo.SyncQueueItemList;
            INSERT INTO @Items (ItemNo, [Type], EntityKey, ScheduledFor)
            VALUES (1, 'InventorySync', N'status-finished', DATEADD(DAY, 1, SYSUTCDATETIME()));
            EXEC dbo.Add_SyncQueue_trx @Items = @Items;
        """)
        [(key, token)] = db.query(cursor, "SELECT TOP (1) EnqueuedAt, UpdatedAt FROM dbo.SyncQueue "
                                          "WHERE EntityKey = N'status-finished' ORDER BY EnqueuedAt DESC;")
        db.call(conn, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token)
        db.run_batch(cursor, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; BEGIN TRANSACTION;")
        try:
            shown = db.query(cursor, "SELECT [Status], Items FROM dbo.QueueHealth_V "
                                     "WHERE [Queue] = 'SyncQueue';")
            held = db.query(cursor, "SELECT [Status], COUNT(*) FROM dbo.SyncQueue "
                                    "WHERE [Status] IN ('Pending', 'Processing', 'Error', 'Paused') "
                                    "GROUP BY [Status];")
            finished = db.query(cursor, "SELECT COUNT(*) FROM dbo.SyncQueue "
                                        "WHERE dbo.QueueIsFinished_fn([Status]) = 1;")[0][0]
        finally:
            db.run_batch(cursor, "COMMIT; SET TRANSACTION ISOLATION LEVEL READ COMMITTED;")
    finally:
        conn.close()
    assert finished >= 1  # the cancelled item at least
    assert dict(shown) == {**dict.fromkeys(status.UNFINISHED, 0), **dict(held)}

"""A purge running while eight workers drain the same queue, against a real SQL
Server: nobody deadlocks or waits out a timeout, the purge removes exactly the
finished items old enough, and nothing unfinished or recent goes."""

from __future__ import annotations

import threading
import time

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

OLD = 5_000  # finished two hours ago: the purge's
NEW = 5_000  # to be drained while it runs
WORKERS = 8
CHUNK = 2_500
QUERY_TIMEOUT_S = 120
DEADLINE_S = 600

ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey)
SELECT TOP ({count}) x.n, 'CustomerSync', N'{prefix}-' + CAST({offset} + x.n AS NVARCHAR(10))
FROM (
    SELECT ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n
    FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b
) AS x
ORDER BY x.n;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""


def enqueue(conn, prefix: str, total: int) -> None:
    for offset in range(0, total, CHUNK):
        db.run_batch(conn.cursor(), ENQUEUE.format(count=min(CHUNK, total - offset), offset=offset,
                                                   prefix=prefix))


def drain(conn_str: str, n: int, errors: list, deadline: float) -> None:
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            rows = db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=f"drain/{n}", BatchSize=10,
                           WaitMs=200).result_sets[0]
            if not rows:
                left = db.query(conn.cursor(), "SELECT COUNT(*) FROM dbo.SyncQueue "
                                               "WHERE [Status] <> 'Completed';")[0][0]
                if left == 0:
                    return
                continue
            for key, token, _, _ in rows:
                db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
        errors.append("deadline passed with work left")
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        conn.close()


def purge(conn_str: str, removed: list, errors: list, done: threading.Event) -> None:
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    try:
        while not done.is_set():
            result = db.call(conn, "dbo.Purge_SyncQueue_trx", OlderThanMinutes=60, BatchSize=200)
            removed.append(result.result_sets[0][0][0])
            done.wait(0.2)  # as an Agent job would, every so often
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        conn.close()


def test_a_purge_beside_eight_workers_removes_only_old_finished_items(mssql, new_database) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    conn = db.connect(conn_str)
    enqueue(conn, "old", OLD)
    db.run_batch(conn.cursor(), "UPDATE dbo.SyncQueue SET [Status] = 'Completed', "
                                "UpdatedAt = DATEADD(HOUR, -2, UpdatedAt) WHERE EntityKey LIKE N'old-%';")
    enqueue(conn, "new", NEW)

    errors: list[str] = []
    removed: list[int] = []
    done = threading.Event()
    deadline = time.monotonic() + DEADLINE_S
    purger = threading.Thread(target=purge, args=(conn_str, removed, errors, done))
    workers = [threading.Thread(target=drain, args=(conn_str, n, errors, deadline)) for n in range(WORKERS)]
    purger.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join(DEADLINE_S + QUERY_TIMEOUT_S)
    done.set()
    purger.join(QUERY_TIMEOUT_S * 2)
    assert not any(t.is_alive() for t in [*workers, purger])
    assert errors == []  # no deadlock victim, no lock timeout, on either side

    removed.append(db.call(conn, "dbo.Purge_SyncQueue_trx", OlderThanMinutes=60).result_sets[0][0][0])
    left = dict(db.query(conn.cursor(), "SELECT LEFT(EntityKey, 3), COUNT(*) FROM dbo.SyncQueue "
                                        "GROUP BY LEFT(EntityKey, 3);"))
    conn.close()
    assert sum(removed) == OLD
    assert left == {"new": NEW}  # drained while the purge ran, and too recent for it


def test_a_purge_removes_a_notification_with_its_subtype_channels_and_history_and_archives_it(
    mssql, new_database
) -> None:
    """Against the real foreign keys (tSQLt's fakes drop them): claimed and completed
    through the procedures, aged, then purged with @Archive = 1."""
    deploy(REPO, mssql, create_db=new_database)
    conn = db.connect(db.with_database(mssql.conn_str, new_database))
    cursor = conn.cursor()
    for n in range(20):
        db.call(conn, "dbo.Add_Notification_ResetPassword_trx", UserID=n + 1, Username=f"user{n}",
                OTP="123456", EmailTo=f"user{n}@example.com", PhoneNumber="+14155550123")
    for _ in range(20):
        (key, token, _, _), = db.call(conn, "dbo.Next_Notification_trx", LockedBy="purge/1").result_sets[0]
        db.call(conn, "dbo.Modify_Notification_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
    db.run_batch(cursor, "UPDATE dbo.Notification SET UpdatedAt = DATEADD(DAY, -2, UpdatedAt);")
    count = "SELECT COUNT(*) FROM dbo.{0};"
    assert db.query(cursor, count.format("NotificationAttempt"))[0][0] == 20

    result = db.call(conn, "dbo.Purge_Notification_trx", OlderThanMinutes=60, BatchSize=7, Archive=True)
    assert result.result_sets[0] == [(20, 20)]
    for table in ("Notification", "Notification_ResetPassword", "Notification_Email", "Notification_Sms",
                  "NotificationAttempt"):
        assert db.query(cursor, count.format(table))[0][0] == 0, table
    archived = db.query(cursor, "SELECT COUNT(*), MIN(EmailTo), MIN(PhoneNumber) "
                                "FROM dbo.NotificationArchive;")
    conn.close()
    assert archived == [(20, "user0@example.com", "+14155550123")]

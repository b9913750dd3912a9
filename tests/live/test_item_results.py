"""What the worker-lifecycle procedures return to a client, against a real SQL
Server. tSQLt cannot capture a _trx's result set (INSERT ... EXEC opens the very
transaction a _trx refuses), so the rows and their order are checked here."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from relq import db

pytestmark = pytest.mark.mssql

JOB = """
CREATE OR ALTER PROCEDURE dbo.RelqTest_Job_utx
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX),
    @Response NVARCHAR(MAX) OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET @Response = N'synced ' + @EntityKey;
    IF @EntityKey LIKE N'bad%' RETURN 1;
    RETURN 0;
END;
"""


@pytest.fixture
def conn(mssql, live_database: str):
    connection = db.connect(db.with_database(mssql.conn_str, live_database))
    connection.timeout = 120
    db.run_batch(connection.cursor(), "DELETE FROM dbo.Notification;")  # this module's queue alone
    yield connection
    connection.close()


def enqueue(conn, n: int, **extra) -> list[datetime]:
    return [db.call(conn, "dbo.Add_Notification_ResetPassword_trx", UserID=i + 1, Username=f"user{i}",
                    OTP="123456", EmailTo=f"user{i}@example.com", **extra).result_sets[0][0][0]
            for i in range(n)]


def test_a_batch_claim_returns_its_items_most_urgent_first_with_their_leases(conn) -> None:
    low = enqueue(conn, 2)
    high = enqueue(conn, 1, Priority=5)
    claim = db.call(conn, "dbo.Next_Notification_Batch_trx", LockedBy="results/1", BatchSize=10)
    assert claim.columns[0] == ["EnqueuedAt", "UpdatedAt", "LeaseUntil", "AttemptNum"]
    rows = claim.result_sets[0]
    assert [r[0] for r in rows] == high + low
    assert all(r[3] == 1 and r[2] > r[1] for r in rows)

    key, token, lease, _ = rows[0]
    extended = db.call(conn, "dbo.Extend_Notification_trx", EnqueuedAt=key, UpdatedAt=token,
                       LeaseSeconds=3600).result_sets[0]
    assert extended[0][0] == key and extended[0][1] > token and extended[0][2] > lease


def test_a_batch_report_returns_every_item_in_key_order(conn) -> None:
    enqueue(conn, 3)
    rows = db.call(conn, "dbo.Next_Notification_Batch_trx", LockedBy="results/2", BatchSize=3).result_sets[0]
    values = ", ".join(f"('{k.isoformat()}', '{t.isoformat()}', '{s}')"
                       for (k, t, _, _), s in zip(rows, ("Completed", "Error", "Completed"), strict=True))
    reported = db.query(conn.cursor(), f"""
        SET NOCOUNT ON;
        DECLARE @Outcomes dbo.NotificationOutcomeList;
        INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status]) VALUES {values};
        EXEC dbo.Modify_Notification_Batch_trx @Outcomes = @Outcomes;
    """)
    assert [r[0] for r in reported] == sorted(r[0] for r in rows)
    assert [r[2] for r in reported] == ["Completed", "Error", "Completed"]
    assert reported[1][3] > datetime.utcnow() - timedelta(minutes=1)  # due again after the backoff


@pytest.mark.parametrize("action, start, end", [
    ("Pause", "Pending", "Paused"),
    ("Cancel", "Pending", "Cancelled"),
])
def test_an_item_control_returns_the_item_it_moved(conn, action: str, start: str, end: str) -> None:
    (key,) = enqueue(conn, 1)
    result = db.call(conn, f"dbo.{action}_Notification_trx", EnqueuedAt=key)
    assert result.columns[0] == ["EnqueuedAt", "UpdatedAt", "Status", "ScheduledFor"]
    assert [(r[0], r[2]) for r in result.result_sets[0]] == [(key, end)]


def test_a_paused_item_resumes_and_a_failed_one_is_retried_and_rescheduled(conn) -> None:
    (key,) = enqueue(conn, 1)
    db.call(conn, "dbo.Pause_Notification_trx", EnqueuedAt=key)
    assert db.call(conn, "dbo.Resume_Notification_trx", EnqueuedAt=key).result_sets[0][0][2] == "Pending"
    (_, token, _, _), = db.call(conn, "dbo.Next_Notification_trx", LockedBy="results/3").result_sets[0]
    db.call(conn, "dbo.Modify_Notification_trx", EnqueuedAt=key, UpdatedAt=token, Status="Failed")
    later = datetime.utcnow().replace(microsecond=0) + timedelta(days=1)
    retried = db.call(conn, "dbo.Retry_Notification_trx", EnqueuedAt=key, ScheduledFor=later).result_sets[0]
    assert (retried[0][2], retried[0][3]) == ("Pending", later)
    sooner = later - timedelta(hours=12)
    rescheduled = db.call(conn, "dbo.Reschedule_Notification_trx", EnqueuedAt=key,
                          ScheduledFor=sooner).result_sets[0]
    assert rescheduled[0][3] == sooner


def test_the_drain_runs_a_job_procedure_and_returns_what_it_did(conn) -> None:
    cursor = conn.cursor()
    db.run_batch(cursor, JOB)
    db.run_batch(cursor, """
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = 'RelqTestJob')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('RelqTestJob');
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueTypeProcedure WHERE [Type] = 'RelqTestJob')
            INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
            VALUES ('RelqTestJob', N'dbo.RelqTest_Job_utx');
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey)
        VALUES (1, 'RelqTestJob', N'good-1'), (2, 'RelqTestJob', N'good-2'), (3, 'RelqTestJob', N'bad-3');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    result = db.call(conn, "dbo.Drain_SyncQueue_trx", Type="RelqTestJob", LockedBy="agent/results")
    assert result.columns[0] == ["Claimed", "Completed", "Failed", "TakenOver"]
    assert result.result_sets[0] == [(3, 2, 1, 0)]
    states = dict(db.query(cursor, "SELECT EntityKey, [Status] FROM dbo.SyncQueue "
                                   "WHERE [Type] = 'RelqTestJob';"))
    assert states == {"good-1": "Completed", "good-2": "Completed", "bad-3": "Error"}


def test_an_enqueue_returns_a_row_per_item_saying_which_were_duplicates(conn) -> None:
    cursor = conn.cursor()
    cursor.execute("""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
        VALUES (1, 'CustomerSync', N'x', N'dup-results'), (2, 'CustomerSync', N'y', N'dup-results'),
            (3, 'CustomerSync', N'z', NULL);
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    cursor.close()
    assert columns == ["EnqueuedAt", "Type", "EntityKey", "ItemNo", "IsDuplicate"]
    assert [(r[3], bool(r[4])) for r in rows] == [(1, False), (2, True), (3, False)]
    assert rows[0][0] == rows[1][0] != rows[2][0]  # the duplicate is the first item

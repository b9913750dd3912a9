"""What the worker-lifecycle procedures and the item controls do for a client,
against a real SQL Server: their rows, tokens, attempt history and error numbers.
tSQLt cannot capture a _trx's result set (INSERT ... EXEC opens the very
transaction a _trx refuses), and it fakes the tables, so it sees neither locks
nor the real foreign keys: both are checked here.

The module shares the session's database with others. Its notifications are the
only ones in it, and its SyncQueue jobs are of its own types, claimed with @Type:
no other module's items come into its claims, and each test starts from an empty
queue, emptied through the procedures (see ``clear``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from relq import db
from tests.results import CLAIM_COLUMNS, ITEM_COLUMNS, NO_ERROR

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
CONTROL = "RelqTestControl"  # the job type of this module's SyncQueue jobs (the drain's is RelqTestJob)
OWN_JOBS = "[Type] IN ('RelqTestJob', 'RelqTestControl')"
CONTROL_TYPE = """
IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = 'RelqTestControl')
    INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('RelqTestControl');
"""
# What a Cancel_ moves to Cancelled; the other states are finished, and a purge takes them.
UNFINISHED = "('Pending', 'Processing', 'Error', 'Paused')"
PURGE = """
SET NOCOUNT ON;
DECLARE @Keys NVARCHAR(MAX) = (SELECT v.EnqueuedAt, v.UpdatedAt FROM {view} AS v WHERE {where} FOR JSON PATH);
EXEC {purge} @Keys = @Keys;
"""


@dataclass(frozen=True)
class Queue:
    """What ``clear`` needs of a queue: its worker view and procedures, named in full."""

    view: str
    cancel: str
    purge: str


NOTIFICATIONS = Queue("dbo.Worker_Notification_V", "dbo.Cancel_Notification_trx",
                      "dbo.Purge_Notification_trx")
SYNC_JOBS = Queue("dbo.Worker_SyncQueue_V", "dbo.Cancel_SyncQueue_trx", "dbo.Purge_SyncQueue_trx")


def clear(conn, queue: Queue, where: str = "1 = 1") -> None:
    """Remove the items of ``queue`` that ``where`` picks, through its procedures:
    cancel the unfinished ones, then purge them all by key and token. The purge
    deletes an item with its attempt history and its subtype and channel rows; a
    plain DELETE of dbo.Notification is refused (547) as soon as one notification
    has them, since they reference it without a cascade."""
    cursor = conn.cursor()
    for (key,) in db.query(cursor, f"SELECT EnqueuedAt FROM {queue.view} "
                                   f"WHERE [Status] IN {UNFINISHED} AND {where};"):
        db.call(conn, queue.cancel, EnqueuedAt=key)
    count = f"SELECT COUNT(*) FROM {queue.view} WHERE {where};"
    ((listed,),) = db.query(cursor, count)
    if listed:
        removed = db.query(cursor, PURGE.format(view=queue.view, where=where, purge=queue.purge))
        assert removed == [(listed, 0)], f"{queue.purge} removed {removed} of {listed} items"
    assert db.query(cursor, count) == [(0,)]


@pytest.fixture
def conn(mssql, live_database: str):
    connection = db.connect(db.with_database(mssql.conn_str, live_database))
    connection.timeout = 120
    db.run_batch(connection.cursor(), CONTROL_TYPE)
    clear(connection, NOTIFICATIONS)  # this module's queue alone
    clear(connection, SYNC_JOBS, OWN_JOBS)
    yield connection
    # Nothing held or due is left for another module's claims to take back.
    clear(connection, NOTIFICATIONS)
    clear(connection, SYNC_JOBS, OWN_JOBS)
    connection.close()


def refused(number: int, conn, procedure: str, **params) -> None:
    """``procedure`` fails with error ``number``."""
    with pytest.raises(db.SqlError) as error:
        db.call(conn, procedure, **params)
    assert error.value.number == number, str(error.value)


def utc(**delta: float) -> datetime:
    """Now (UTC, as the procedures take times) plus ``delta``, in whole seconds."""
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0) + timedelta(**delta)


def enqueue(conn, n: int, **extra) -> list[datetime]:
    return [db.call(conn, "dbo.Add_Notification_ResetPassword_trx", UserID=i + 1, Username=f"user{i}",
                    OTP="123456", EmailTo=f"user{i}@example.com", **extra).result_sets[0][0][0]
            for i in range(n)]


def test_a_batch_claim_returns_its_items_most_urgent_first_with_their_leases(conn) -> None:
    low = enqueue(conn, 2)
    high = enqueue(conn, 1, Priority=5)
    claim = db.call(conn, "dbo.Next_Notification_Batch_trx", LockedBy="results/1", BatchSize=10)
    assert claim.columns[0] == CLAIM_COLUMNS
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
    assert reported[1][3] > reported[1][1]  # due again after the backoff, not at once


@pytest.mark.parametrize("procedure, end", [
    ("dbo.Pause_Notification_trx", "Paused"),
    ("dbo.Cancel_Notification_trx", "Cancelled"),
])
def test_an_item_control_returns_the_item_it_moved(conn, procedure: str, end: str) -> None:
    (key,) = enqueue(conn, 1)  # Pending
    result = db.call(conn, procedure, EnqueuedAt=key)
    assert result.columns[0] == ITEM_COLUMNS
    assert [(r[0], r[2]) for r in result.result_sets[0]] == [(key, end)]


def test_a_paused_item_resumes_and_a_failed_one_is_retried_and_rescheduled(conn) -> None:
    (key,) = enqueue(conn, 1)
    db.call(conn, "dbo.Pause_Notification_trx", EnqueuedAt=key)
    assert db.call(conn, "dbo.Resume_Notification_trx", EnqueuedAt=key).result_sets[0][0][2] == "Pending"
    (_, token, _, _), = db.call(conn, "dbo.Next_Notification_trx", LockedBy="results/3").result_sets[0]
    db.call(conn, "dbo.Modify_Notification_trx", EnqueuedAt=key, UpdatedAt=token, Status="Failed")
    later = utc(days=1)
    retried = db.call(conn, "dbo.Retry_Notification_trx", EnqueuedAt=key, ScheduledFor=later).result_sets[0]
    assert (retried[0][2], retried[0][3]) == ("Pending", later)
    sooner = later - timedelta(hours=12)
    rescheduled = db.call(conn, "dbo.Reschedule_Notification_trx", EnqueuedAt=key,
                          ScheduledFor=sooner).result_sets[0]
    assert rescheduled[0][3] == sooner


def test_a_terminate_ends_a_running_notification_and_refuses_its_workers_report(conn) -> None:
    (key,) = enqueue(conn, 1)
    ((_, token, _, _),) = db.call(conn, "dbo.Next_Notification_trx", LockedBy="results/4").result_sets[0]
    result = db.call(conn, "dbo.Terminate_Notification_trx", EnqueuedAt=key, UpdatedAt=token)
    assert result.columns[0] == ITEM_COLUMNS
    ((moved, after, status, _),) = result.result_sets[0]
    assert (moved, status) == (key, "Terminated") and after > token
    cursor = conn.cursor()
    history = "SELECT AttemptNum, Outcome, LockedBy FROM dbo.NotificationAttempt WHERE EnqueuedAt = ?;"
    assert db.query(cursor, history, key) == [(1, "Terminated", "results/4")]
    # The worker, still at work on it, reports with the token of its claim: refused, nothing changes.
    refused(735705, conn, "dbo.Modify_Notification_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
    state = "SELECT [Status], UpdatedAt FROM dbo.Worker_Notification_V WHERE EnqueuedAt = ?;"
    assert db.query(cursor, state, key) == [("Terminated", after)]
    assert db.query(cursor, history, key) == [(1, "Terminated", "results/4")]
    refused(735708, conn, "dbo.Terminate_Notification_trx", EnqueuedAt=key)  # finished: no control moves it


NOTIFICATION_TABLES = """
SELECT
    (SELECT COUNT(*) FROM dbo.Notification),
    (SELECT COUNT(*) FROM dbo.Notification_ResetPassword),
    (SELECT COUNT(*) FROM dbo.Notification_Email),
    (SELECT COUNT(*) FROM dbo.Notification_Sms),
    (SELECT COUNT(*) FROM dbo.NotificationAttempt),
    (SELECT COUNT(*) FROM dbo.NotificationArchive);
"""


def test_the_cleanup_removes_notifications_with_their_channels_and_history(conn) -> None:
    """What every test of this module starts with, after a notification with both
    channels was enqueued and claimed: a DELETE of dbo.Notification is refused
    (its subtype and channel rows reference it without a cascade), ``clear`` is not."""
    enqueue(conn, 1, PhoneNumber="+14155550123")  # e-mail and SMS
    enqueue(conn, 1)  # e-mail only, left Pending
    assert len(db.call(conn, "dbo.Next_Notification_trx", LockedBy="results/5").result_sets[0]) == 1
    cursor = conn.cursor()
    ((*before, archived),) = db.query(cursor, NOTIFICATION_TABLES)
    assert before == [2, 2, 2, 1, 1]
    with pytest.raises(db.SqlError) as error:
        db.run_batch(cursor, "DELETE FROM dbo.Notification;")
    assert error.value.number == 547, str(error.value)  # a REFERENCE constraint: Email_Is_Notification, ...
    assert db.query(cursor, NOTIFICATION_TABLES) == [(*before, archived)]

    clear(conn, NOTIFICATIONS)
    assert db.query(cursor, NOTIFICATION_TABLES) == [(0, 0, 0, 0, 0, archived)]  # and nothing archived


def test_a_batch_enqueue_returns_a_row_per_item_and_writes_each_items_channels(conn) -> None:
    rows = db.query(conn.cursor(), """
        SET NOCOUNT ON;
        DECLARE @Items dbo.Notification_ResetPasswordItemList;
        INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, PhoneNumber)
        VALUES (1, 101, N'ann', '111111', N'ann@example.com', '+14155550101'),
            (2, 102, N'bob', '222222', NULL, '+14155550102');
        EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
    """)
    assert [(item, bool(duplicate)) for _, item, duplicate in rows] == [(1, False), (2, False)]
    assert rows[0][0] < rows[1][0]  # keys in ItemNo order
    shown = db.query(conn.cursor(), "SELECT EnqueuedAt, [Status], Username, EmailTo, PhoneNumber "
                                    "FROM dbo.Worker_Notification_V ORDER BY EnqueuedAt;")
    assert shown == [(rows[0][0], "Pending", "ann", "ann@example.com", "+14155550101"),
                     (rows[1][0], "Pending", "bob", None, "+14155550102")]


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
        VALUES (1, 'RelqTestControl', N'x', N'dup-results'), (2, 'RelqTestControl', N'y', N'dup-results'),
            (3, 'RelqTestControl', N'z', NULL);
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    cursor.close()
    assert columns == ["EnqueuedAt", "Type", "EntityKey", "ItemNo", "IsDuplicate"]
    assert [(r[3], bool(r[4])) for r in rows] == [(1, False), (2, True), (3, False)]
    assert rows[0][0] == rows[1][0] != rows[2][0]  # the duplicate is the first item


# -- SyncQueue: the item controls and the slot rule, on jobs of this module's own type -------------------


def add_jobs(conn, *entities: str) -> list[datetime]:
    """One job of this module's type per entity key; their keys, in that order."""
    values = ", ".join(f"({n}, '{CONTROL}', N'{entity}')" for n, entity in enumerate(entities, start=1))
    rows = db.query(conn.cursor(), f"""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES {values};
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    return [row[0] for row in sorted(rows, key=lambda row: row[3])]


def claim(conn, slot: str, batch: int = 1) -> list[tuple]:
    """A claim of this module's job type only (EnqueuedAt, UpdatedAt, LeaseUntil, AttemptNum)."""
    return db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=slot, BatchSize=batch,
                   Type=CONTROL).result_sets[0]


def report(conn, key: datetime, token: datetime, status: str = "Completed", **extra) -> None:
    db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status=status, **extra)


def job(conn, key: datetime) -> tuple:
    """The job as it is now: (Status, AttemptNum, UpdatedAt, LeaseUntil, ScheduledFor)."""
    return db.query(conn.cursor(), "SELECT [Status], AttemptNum, UpdatedAt, LeaseUntil, ScheduledFor "
                                   "FROM dbo.Worker_SyncQueue_V WHERE EnqueuedAt = ?;", key)[0]


def attempts(conn, key: datetime) -> list[tuple]:
    """The job's attempt history, oldest first: (AttemptNum, Outcome, Error)."""
    return db.query(conn.cursor(), "SELECT AttemptNum, Outcome, Error FROM dbo.SyncQueueAttempt "
                                   "WHERE EnqueuedAt = ? ORDER BY StartedAt;", key)


def test_an_extend_renews_the_lease_of_a_held_job_and_retires_its_old_token(conn) -> None:
    (key,) = add_jobs(conn, "extend")
    ((_, token, lease, attempt),) = claim(conn, "results/extend")
    extended = db.call(conn, "dbo.Extend_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, LeaseSeconds=3600)
    assert extended.return_code == 0
    assert extended.columns[0] == ["EnqueuedAt", "UpdatedAt", "LeaseUntil"]
    ((extended_key, renewed, until),) = extended.result_sets[0]
    assert extended_key == key and renewed > token
    assert until - lease > timedelta(minutes=50)  # the claim's 300 s, against 3,600 s from now
    assert job(conn, key)[:4] == ("Processing", attempt, renewed, until)  # the same attempt, held longer

    refused(735705, conn, "dbo.Extend_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token)
    refused(735705, conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
    assert job(conn, key)[:4] == ("Processing", attempt, renewed, until)
    report(conn, key, renewed)
    assert attempts(conn, key) == [(1, "Completed", NO_ERROR)]
    refused(735706, conn, "dbo.Extend_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=job(conn, key)[2])


def test_a_terminate_ends_the_running_attempt_and_refuses_the_workers_report(conn) -> None:
    running, waiting = add_jobs(conn, "terminate-running", "terminate-waiting")
    ((claimed, token, _, _),) = claim(conn, "results/terminate")
    assert claimed == running
    result = db.call(conn, "dbo.Terminate_SyncQueue_trx", EnqueuedAt=running, UpdatedAt=token)
    assert result.columns[0] == ITEM_COLUMNS
    ((moved, after, status, _),) = result.result_sets[0]
    assert (moved, status) == (running, "Terminated") and after > token
    assert attempts(conn, running) == [(1, "Terminated", NO_ERROR)]

    refused(735705, conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=running, UpdatedAt=token, Status="Completed")
    assert job(conn, running)[:3] == ("Terminated", 1, after)  # the late report changed nothing
    assert attempts(conn, running) == [(1, "Terminated", NO_ERROR)]
    refused(735706, conn, "dbo.Terminate_SyncQueue_trx", EnqueuedAt=waiting)  # Processing only
    assert job(conn, waiting)[:2] == ("Pending", 0)


def test_a_failed_job_is_retried_with_a_fresh_budget_and_rescheduled(conn) -> None:
    (key,) = add_jobs(conn, "retry")
    ((_, token, _, _),) = claim(conn, "results/retry")
    report(conn, key, token, "Failed", Error="planted failure")
    refused(735708, conn, "dbo.Reschedule_SyncQueue_trx", EnqueuedAt=key, ScheduledFor=utc(days=1))

    later = utc(days=1)
    retried = db.call(conn, "dbo.Retry_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=job(conn, key)[2],
                      ScheduledFor=later)
    assert retried.columns[0] == ITEM_COLUMNS
    ((moved, _, status, due),) = retried.result_sets[0]
    assert (moved, status, due) == (key, "Pending", later)
    assert job(conn, key)[:2] == ("Pending", 0)  # a fresh attempt budget
    assert claim(conn, "results/retry") == []  # due tomorrow

    sooner = utc(hours=-1)
    rescheduled = db.call(conn, "dbo.Reschedule_SyncQueue_trx", EnqueuedAt=key, ScheduledFor=sooner)
    ((moved, _, status, due),) = rescheduled.result_sets[0]
    assert (moved, status, due) == (key, "Pending", sooner)
    ((claimed, token, _, attempt),) = claim(conn, "results/retry")
    assert (claimed, attempt) == (key, 1)
    assert attempts(conn, key) == [(1, "Failed", "planted failure"), (1, None, NO_ERROR)]
    refused(735706, conn, "dbo.Retry_SyncQueue_trx", EnqueuedAt=key)  # Failed only
    refused(735708, conn, "dbo.Reschedule_SyncQueue_trx", EnqueuedAt=key, ScheduledFor=later)  # not running
    assert job(conn, key)[:3] == ("Processing", 1, token)


def test_a_paused_job_resumes_and_is_claimed_once_due(conn) -> None:
    (key,) = add_jobs(conn, "resume")
    enqueued_token = job(conn, key)[2]
    refused(735706, conn, "dbo.Resume_SyncQueue_trx", EnqueuedAt=key)  # Paused only
    paused = db.call(conn, "dbo.Pause_SyncQueue_trx", EnqueuedAt=key).result_sets[0]
    ((moved, paused_token, status, _),) = paused
    assert (moved, status) == (key, "Paused")
    assert claim(conn, "results/resume") == []  # no claim takes a paused job
    refused(735705, conn, "dbo.Resume_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=enqueued_token)  # stale
    assert job(conn, key)[0] == "Paused"

    sooner = utc(hours=-1)
    resumed = db.call(conn, "dbo.Resume_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=paused_token,
                      ScheduledFor=sooner)
    assert resumed.columns[0] == ITEM_COLUMNS
    ((_, token, status, due),) = resumed.result_sets[0]
    assert (status, due) == ("Pending", sooner) and token > paused_token
    assert [(row[0], row[3]) for row in claim(conn, "results/resume")] == [(key, 1)]


def test_a_slot_that_claims_while_holding_gets_its_held_job_back_as_a_new_attempt(conn) -> None:
    """A slot claims only with nothing in hand (README, 'Leases'; relq/worker/runtime.py):
    a claim takes the items its slot name still holds for abandoned by a restart. So a
    worker that claims again under the same name before it reports its last item gets
    that item back as its next attempt, and its report with the first token is refused
    (735710) and changes nothing. The held row is not locked at that moment, so READPAST
    does not skip it: this happens every time, not by chance."""
    first, second = add_jobs(conn, "slot-first", "slot-second")
    rows = claim(conn, "results/slot", batch=2)
    assert [(row[0], row[3]) for row in rows] == [(first, 1), (second, 1)]
    (_, first_token, _, _), (_, second_token, _, _) = rows
    report(conn, first, first_token)

    ((again, token, _, attempt),) = claim(conn, "results/slot")  # while it still holds `second`
    assert (again, attempt) == (second, 2) and token > second_token
    refused(735710, conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=second, UpdatedAt=second_token,
            Status="Completed")
    assert job(conn, second)[:3] == ("Processing", 2, token)
    (abandoned, current) = attempts(conn, second)
    assert abandoned[:2] == (1, "Error") and abandoned[2].startswith("abandoned: results/slot restarted")
    assert current == (2, None, NO_ERROR)
    report(conn, second, token)
    assert attempts(conn, second)[1][:2] == (2, "Completed")


def test_a_slot_that_claims_under_its_other_name_keeps_the_job_it_holds(conn) -> None:
    """The way a prefetching worker claims before it reports (tests/live/test_purge.py):
    under two names in turn, never under the name it holds an item with."""
    first, second, third = add_jobs(conn, "names-first", "names-second", "names-third")
    rows = claim(conn, "results/names/a", batch=2)
    assert [row[0] for row in rows] == [first, second]
    (_, first_token, _, _), (_, second_token, _, _) = rows
    report(conn, first, first_token)

    assert [(row[0], row[3]) for row in claim(conn, "results/names/b", batch=2)] == [(third, 1)]
    assert job(conn, second)[:3] == ("Processing", 1, second_token)  # still held, not taken back
    report(conn, second, second_token)
    assert attempts(conn, second) == [(1, "Completed", NO_ERROR)]

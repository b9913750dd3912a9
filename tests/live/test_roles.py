"""The least-privilege roles against a real SQL Server: a database user in each
role (EXECUTE AS USER, as an application's login mapped to that user would be)
does what the role is for, through the procedures and views, and nothing else:
no role reads or writes a queue table directly."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta

import pytest

from relq import db
from relq.errors import Msg
from relq.pipeline.store import SqlSession
from relq.worker.cli import check_queue
from relq.worker.procedures import SqlProcedures
from tests.live.jobs import enqueue_jobs

pytestmark = pytest.mark.mssql

DENIED = 229  # The %ls permission was denied on the object ...


@pytest.fixture
def as_role(mssql, live_database: str):
    """Run a batch as a new user (without login) that is a member of a role."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    users: list[str] = []

    def run(role: str, sql: str) -> list[tuple]:
        user = f"relq_{role}_{secrets.token_hex(3)}"
        users.append(user)
        db.run_batch(conn.cursor(), f"CREATE USER [{user}] WITHOUT LOGIN; "
                                    f"ALTER ROLE {role} ADD MEMBER [{user}];")
        cursor = conn.cursor()
        try:
            return db.query(cursor, f"EXECUTE AS USER = N'{user}'; {sql}")
        finally:
            db.run_batch(conn.cursor(), "IF USER_NAME() <> N'dbo' REVERT;")

    yield run
    for user in users:
        db.run_batch(conn.cursor(), f"DROP USER IF EXISTS [{user}];")
    conn.close()


def denied(as_role, role: str, sql: str, what: str = "") -> None:
    """Refused for want of a permission (on ``what``, when named), not for another reason."""
    with pytest.raises(db.SqlError) as refused:
        as_role(role, sql)
    assert refused.value.number == DENIED, str(refused.value)
    assert what in refused.value.text, str(refused.value)


# The drain's T-SQL jobs: a job procedure dbo owns, and a type whose procedure does not exist.
DRAIN_JOB = """
CREATE OR ALTER PROCEDURE dbo.RelqTest_RoleJob_utx
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX),
    @Response NVARCHAR(MAX) OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET @Response = N'run by ' + USER_NAME();
    IF @EntityKey LIKE N'bad%' RETURN 1;
    RETURN 0;
END;
"""
DRAIN_TYPES = {"RelqRoleJob": "dbo.RelqTest_RoleJob_utx", "RelqRoleMissing": "dbo.RelqTest_NoSuchJob_utx"}


@pytest.fixture
def drain_types(mssql, live_database: str):
    """As dbo: the job procedure, the two job types with their procedures' names, and
    no items of them yet. Yields the dbo connection, to enqueue and to look."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    cursor = conn.cursor()
    db.run_batch(cursor, DRAIN_JOB)
    for job_type, procedure in DRAIN_TYPES.items():
        db.run_batch(cursor, f"""
            IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{job_type}')
                INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{job_type}');
            DELETE FROM dbo.SyncQueueTypeProcedure WHERE [Type] = '{job_type}';
            INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
            VALUES ('{job_type}', N'{procedure}');
            -- its attempts go with it (ON DELETE CASCADE)
            DELETE FROM dbo.SyncQueue WHERE [Type] = '{job_type}';
        """)
    yield conn
    conn.close()


def jobs_of(conn, job_type: str) -> dict[str, tuple]:
    """The items of ``job_type`` by entity key: (Status, AttemptNum, LeaseUntil, Response)."""
    rows = db.query(conn.cursor(), "SELECT EntityKey, [Status], AttemptNum, LeaseUntil, Response "
                                   "FROM dbo.SyncQueue WHERE [Type] = ?;", job_type)
    return {entity: tuple(rest) for entity, *rest in rows}


def drain_as_admin(as_role, job_type: str) -> list[tuple]:
    return as_role("QueueAdmin",
                   f"EXEC dbo.Drain_SyncQueue_trx @Type = '{job_type}', @LockedBy = N'admin/drain';")


ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, 'CustomerSync', N'role-test');
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""


@pytest.mark.parametrize("role", ["QueueProducer", "QueueWorker", "QueueMonitor", "QueueAdmin"])
@pytest.mark.parametrize("sql", [
    "SELECT TOP (1) EnqueuedAt FROM dbo.SyncQueue;",
    "SELECT TOP (1) EnqueuedAt FROM dbo.NotificationAttempt;",
    "DELETE FROM dbo.SyncQueue WHERE 1 = 0;",
    "UPDATE dbo.Notification SET [Priority] = 1 WHERE 1 = 0;",
])
def test_no_role_reads_or_writes_a_queue_table_directly(as_role, role: str, sql: str) -> None:
    denied(as_role, role, sql)


def test_a_producer_enqueues_through_the_procedure_and_may_not_claim(as_role) -> None:
    rows = as_role("QueueProducer", ENQUEUE)
    assert rows and rows[0][2] == "role-test"
    denied(as_role, "QueueProducer", "EXEC dbo.Next_SyncQueue_trx @LockedBy = N'producer/1';",
           "Next_SyncQueue_trx")


def test_a_producer_may_list_the_job_types_it_names(as_role) -> None:
    """Reference rows, not queue rows: pipeline.enqueue checks items' types against them."""
    assert ("CustomerSync",) in as_role("QueueProducer", "SELECT [Type] FROM dbo.SyncQueueType;")
    assert ("ResetPassword",) in as_role("QueueProducer", "SELECT [Type] FROM dbo.NotificationType;")
    denied(as_role, "QueueWorker", "SELECT [Type] FROM dbo.SyncQueueType;", "SyncQueueType")


def test_a_worker_claims_reads_and_reports_and_may_not_enqueue_or_cancel(as_role) -> None:
    as_role("QueueProducer", ENQUEUE)
    claimed = as_role("QueueWorker", """
        SET NOCOUNT ON;
        DECLARE @Key DATETIME2(7);
        DECLARE @Token DATETIME2(7);
        DECLARE @Rc INT;
        BEGIN TRANSACTION;
        EXEC @Rc = dbo.Next_SyncQueue_utx @LockedBy = N'worker/1', @EnqueuedAt = @Key OUTPUT,
            @UpdatedAt = @Token OUTPUT, @Type = 'CustomerSync';
        IF @Key IS NOT NULL
            EXEC @Rc = dbo.Modify_SyncQueue_utx
                @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Completed';
        COMMIT TRANSACTION;
        SELECT v.[Status] FROM dbo.Worker_SyncQueue_V AS v WHERE v.EnqueuedAt = @Key;
    """)
    assert claimed == [("Completed",)]
    # without its list: a table-valued parameter left out is an empty table, so only the
    # procedure's own permission is asked for
    denied(as_role, "QueueWorker", "BEGIN TRANSACTION; EXEC dbo.Add_SyncQueue_utx; ROLLBACK;",
           "Add_SyncQueue_utx")
    denied(as_role, "QueueWorker", "EXEC dbo.Cancel_SyncQueue_trx @EnqueuedAt = '2024-01-01';",
           "Cancel_SyncQueue_trx")


def test_a_monitor_reads_the_health_views_and_nothing_else(as_role) -> None:
    health = as_role("QueueMonitor", "SELECT [Queue], [Status], Items FROM dbo.QueueHealth_V;")
    assert {queue for queue, _, _ in health} == {"Notification", "SyncQueue"}
    assert as_role("QueueMonitor", "SELECT [Queue] FROM dbo.QueueThroughput_V;")
    denied(as_role, "QueueMonitor", "SELECT TOP (1) EnqueuedAt FROM dbo.Worker_SyncQueue_V;")
    denied(as_role, "QueueMonitor", "EXEC dbo.Next_SyncQueue_trx;")


def test_a_monitor_reads_the_controls_and_an_admin_pauses_and_resumes_a_type(as_role) -> None:
    rows = as_role("QueueMonitor", "SELECT [Queue], [Type], IsPaused FROM dbo.QueueControl_V "
                                   "WHERE [Queue] = N'SyncQueue';")
    assert (("SyncQueue", None, False) in rows) and ("SyncQueue", "CustomerSync", False) in rows
    denied(as_role, "QueueMonitor",
           "EXEC dbo.Pause_Queue_trx @Queue = N'SyncQueue', @Type = 'CustomerSync', @PauseReason = N'no';",
           "Pause_Queue_trx")
    try:
        paused = as_role("QueueAdmin", "EXEC dbo.Pause_Queue_trx @Queue = N'SyncQueue', "
                                       "@Type = 'CustomerSync', @PauseReason = N'role test';")
        # Who: ORIGINAL_LOGIN(), the login that connected, also inside EXECUTE AS USER.
        login = as_role("QueueAdmin", "SELECT ORIGINAL_LOGIN();")[0][0]
        assert paused[0][:4] == ("SyncQueue", "CustomerSync", True, login)
    finally:
        resumed = as_role("QueueAdmin", "EXEC dbo.Resume_Queue_trx @Queue = N'SyncQueue', "
                                        "@Type = 'CustomerSync';")
    assert resumed[0][:3] == ("SyncQueue", "CustomerSync", False)
    denied(as_role, "QueueAdmin", "EXEC dbo.Next_SyncQueue_trx;")


def test_an_admin_controls_items_and_may_not_claim_them(as_role) -> None:
    key = as_role("QueueProducer", ENQUEUE)[0][0]
    cancelled = as_role("QueueAdmin", f"EXEC dbo.Cancel_SyncQueue_trx @EnqueuedAt = '{key.isoformat()}';")
    assert cancelled[0][2] == "Cancelled"
    denied(as_role, "QueueAdmin", "EXEC dbo.Next_SyncQueue_trx;")


def test_an_admin_drains_t_sql_jobs_it_cannot_see_and_they_run_as_the_admin(as_role, drain_types) -> None:
    """QueueAdmin has no permission on the job procedure, so cannot even see it (OBJECT_ID
    is NULL): the drain's look-up sees it as dbo (dbo.JobProcedureToRun_fn, EXECUTE AS
    OWNER), and the ownership chain from dbo's drain to dbo's job runs it all the same, in
    the caller's name (the job itself impersonates nobody)."""
    assert as_role("QueueAdmin", "SELECT OBJECT_ID(N'dbo.RelqTest_RoleJob_utx', N'P');") == [(None,)]
    enqueue_jobs(drain_types, "RelqRoleJob", "good-1", "good-2", "bad-3")

    assert drain_as_admin(as_role, "RelqRoleJob") == [(3, 2, 1, 0)]  # Claimed, Completed, Failed, TakenOver

    jobs = jobs_of(drain_types, "RelqRoleJob")
    assert {entity: job[:3] for entity, job in jobs.items()} == {
        "good-1": ("Completed", 1, None), "good-2": ("Completed", 1, None), "bad-3": ("Error", 1, None)}
    for entity in ("good-1", "good-2"):
        assert jobs[entity][3].startswith("run by relq_QueueAdmin_"), jobs[entity]


def test_an_admin_drain_of_a_missing_job_procedure_raises_735714_and_spends_no_attempt(
        as_role, drain_types) -> None:
    """A procedure that does not exist is found out by the drain's look-up (as dbo sees it)
    before anything runs: the claimed item is given back unworked, the refusal in its Error,
    and the drain stops, naming the procedure."""
    enqueue_jobs(drain_types, "RelqRoleMissing", "gone-1", "gone-2")

    with pytest.raises(db.SqlError) as refused:
        drain_as_admin(as_role, "RelqRoleMissing")

    assert refused.value.number == Msg.JobProcedureRefused, str(refused.value)
    assert "dbo.RelqTest_NoSuchJob_utx" in refused.value.text, str(refused.value)
    jobs = jobs_of(drain_types, "RelqRoleMissing")
    assert {entity: job[:3] for entity, job in jobs.items()} == {
        "gone-1": ("Pending", 0, None), "gone-2": ("Pending", 0, None)}  # nothing held, no attempt spent
    released = db.query(drain_types.cursor(), """
        SELECT a.AttemptNum, a.LockedBy, a.Outcome, a.Error
        FROM dbo.SyncQueueAttempt AS a
        INNER JOIN dbo.SyncQueue AS q ON a.EnqueuedAt = q.EnqueuedAt
        WHERE q.[Type] = 'RelqRoleMissing';
    """)
    # one claim, given back; then the drain stopped
    assert [row[:3] for row in released] == [(1, "admin/drain", "Pending")]
    assert released[0][3].startswith("error 735714: "), released[0][3]
    assert "dbo.RelqTest_NoSuchJob_utx" in released[0][3]


# -- relq's own Python on a member's connection: what the worker and the pipeline send ------------


@pytest.fixture
def dbo_conn(mssql, live_database: str):
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    yield conn
    conn.close()


def enqueued_key(conn, queue: str, tag: str):
    """As dbo: one item of ``queue``, told apart by ``tag``; its key."""
    if queue == "Notification":
        result = db.call(conn, "dbo.Add_Notification_ResetPassword_trx", UserID=1, Username=tag, OTP="123456",
                         EmailTo=f"{tag}@example.com", PreferredLanguage="en")
        return result.result_sets[0][0][0]
    return db.query(conn.cursor(), ENQUEUE.replace("N'role-test'", f"N'{tag}'"))[0][0]


@pytest.mark.parametrize("queue", ["Notification", "SyncQueue"])
def test_a_worker_member_makes_every_call_the_worker_makes(member, dbo_conn, queue: str) -> None:
    """relq.worker's own calls (relq.worker.procedures.SqlProcedures, and the queue check of
    `invoke worker`) on a QueueWorker member's connection: claim, read, extend and report."""
    tag = f"roles-{secrets.token_hex(4)}"
    key = enqueued_key(dbo_conn, queue, tag)
    conn = member("QueueWorker")()
    check_queue(conn, queue)  # sys.procedures shows the member the claim procedure
    procedures = SqlProcedures(conn, queue)
    claims = procedures.claim("roles-test/1", 100, 0)
    try:
        [claim] = [c for c in claims if c.key == key]
        item = procedures.read(claim)
        assert (item.key, item.type) == (key, "ResetPassword" if queue == "Notification" else "CustomerSync")
        claim = procedures.extend(claim)
        _, status = procedures.report(claim, "Completed", response="done by a member")
        assert status == "Completed"
    finally:  # another test's items, claimed along: given back as they were
        for other in claims:
            if other.key != key:
                procedures.report(other, "Pending", error="released: claimed by the roles test")


def test_a_producer_member_enqueues_through_the_pipeline_session(member) -> None:
    """relq.pipeline's SqlSession on a QueueProducer member's connection: the queue's name,
    its job types, and enqueues through both list types, a DedupKey and an ordered group
    taking their locks (Lock_ItemKeys_utx)."""
    tag = secrets.token_hex(4)
    session = SqlSession(member("QueueProducer")())
    assert session.queue_name("syncqueue") == "SyncQueue"
    assert "CustomerSync" in session.job_types("SyncQueue")
    job = {"ItemNo": 1, "Type": "CustomerSync", "EntityKey": f"roles-{tag}", "DedupKey": f"roles-{tag}",
           "GroupKey": f"roles-group-{tag}"}
    assert session.enqueue("SyncQueue", [job]) == [(1, False)]
    assert session.enqueue("SyncQueue", [job]) == [(1, True)]  # its DedupKey is taken
    reset = {"ItemNo": 1, "UserID": 7, "Username": f"roles-{tag}", "OTP": "123456",
             "EmailTo": f"roles-{tag}@example.com", "PreferredLanguage": "en", "DedupKey": f"roles-{tag}"}
    assert session.enqueue("Notification", [reset]) == [(1, False)]


def cancelled(conn, queue_key) -> tuple:
    """As dbo: cancel the item; (its key, its new token) as ISO text, for a purge's @Keys."""
    result = db.call(conn, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=queue_key)
    row = dict(zip(result.columns[0], result.result_sets[0][0], strict=True))
    return db.sql_value(row["EnqueuedAt"]), db.sql_value(row["UpdatedAt"])


def test_an_admin_member_archives_and_purges_through_the_pipeline_session(member, dbo_conn) -> None:
    """relq.pipeline's archive on a QueueAdmin member's connection: its run lock, the worker
    view's columns and rows, and the exact purge; then the purge an Agent job runs, archiving."""
    tag = f"roles-{secrets.token_hex(4)}"
    first, second = (enqueued_key(dbo_conn, "SyncQueue", f"{tag}-{n}") for n in (1, 2))
    first_keys, second_keys = cancelled(dbo_conn, first), cancelled(dbo_conn, second)
    conn = member("QueueAdmin")()
    session = SqlSession(conn)
    resource = f"relq.test.{tag}"
    assert session.try_lock(resource) and session.holds_lock(resource)
    try:
        assert "EnqueuedAt" in session.view_columns("SyncQueue")
        cutoff = session.now()
        assert session.finished_span("SyncQueue", cutoff) is not None
        rows = list(session.read_range("SyncQueue", first, first + timedelta(microseconds=1), cutoff))
        assert [(r["EnqueuedAt"], r["Status"]) for r in rows] == [(first, "Cancelled")]
        assert session.purge("SyncQueue", [first_keys]) == 1
    finally:
        session.unlock(resource)
    assert not session.holds_lock(resource)
    keys = json.dumps([{"EnqueuedAt": second_keys[0], "UpdatedAt": second_keys[1]}])
    purged = db.call(conn, "dbo.Purge_SyncQueue_trx", Keys=keys, Archive=1)
    assert purged.result_sets[0] == [(1, 1)]  # Removed, Archived
    left = db.query(dbo_conn.cursor(), "SELECT COUNT(*) FROM dbo.SyncQueue WHERE EnqueuedAt IN (?, ?);",
                    first, second)
    assert left == [(0,)]
    assert db.query(dbo_conn.cursor(), "SELECT [Status] FROM dbo.SyncQueueArchive WHERE EnqueuedAt = ?;",
                    second) == [("Cancelled",)]

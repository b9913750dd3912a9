"""The drain runs only procedures of the dbo schema, against a real SQL Server: a job type's
JobProcedure that is not dbo.<name> is refused at INSERT and UPDATE (error 547, naming the
CHECK); a row that got in before the CHECK is refused by the drain itself, which gives the
item back unworked (735714) and runs nothing; and a QueueAdmin member, the user an Agent job
step drains as (docs/operations.md), drains a dbo job it cannot even see, and not a procedure
of the same name in another schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from relq import db
from relq.errors import Msg
from tests.live.jobs import enqueue_jobs

pytestmark = pytest.mark.mssql

CHECK = "SyncQueueTypeProcedure_IsRunBy_DboProcedure"
CHECK_VIOLATION = 547  # The INSERT statement conflicted with the CHECK constraint ...
JOB_TYPE = "RelqDrainDbo"
OTHER = "relq_drain_other"  # a schema dbo owns: the ownership chain would run its procedures too
JOB = "RelqTest_DrainDbo_utx"
DBO_JOB = "dbo.RelqTest_DrainDbo_utx"  # names written in full: tests/test_live_coverage.py reads them
OTHER_JOB = "relq_drain_other.RelqTest_DrainDbo_utx"

# The job procedure in dbo, and one of the same name in the other schema: each says which ran.
JOB_SQL = """
CREATE OR ALTER PROCEDURE {schema}.{job}
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX),
    @Response NVARCHAR(MAX) OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET @Response = N'{schema} ran it as ' + USER_NAME();
    RETURN 0;
END;
"""


@pytest.fixture
def dbo_conn(mssql, live_database: str) -> Iterator[Any]:
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    yield conn
    conn.close()


@pytest.fixture
def job_type(dbo_conn) -> Iterator[str]:
    """As dbo: this module's job type without a procedure row or items, the job procedure in
    dbo and its namesake in the other schema. Yields the type; its row goes at the end."""
    cursor = dbo_conn.cursor()
    db.run_batch(cursor, f"IF SCHEMA_ID(N'{OTHER}') IS NULL "
                         f"EXEC (N'CREATE SCHEMA {OTHER} AUTHORIZATION dbo');")
    for schema in ("dbo", OTHER):
        db.run_batch(cursor, JOB_SQL.format(schema=schema, job=JOB))
    db.run_batch(cursor, f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        DELETE FROM dbo.SyncQueueTypeProcedure WHERE [Type] = '{JOB_TYPE}';
        -- its attempts go with it (ON DELETE CASCADE)
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
    """)
    yield JOB_TYPE
    db.run_batch(cursor, f"DELETE FROM dbo.SyncQueueTypeProcedure WHERE [Type] = '{JOB_TYPE}';")


def register(conn, job_type: str, job_procedure: str) -> None:
    db.query(conn.cursor(), "INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure) VALUES (?, ?);",
             job_type, job_procedure)


@contextmanager
def before_the_check(conn) -> Iterator[None]:
    """The CHECK switched off, as if the table had no CHECK yet (a database before
    V0004__job_procedure_dbo.sql); on leaving, this module's rows are gone and the CHECK is
    on and trusted again (WITH CHECK checks every row)."""
    cursor = conn.cursor()
    db.run_batch(cursor, f"ALTER TABLE dbo.SyncQueueTypeProcedure NOCHECK CONSTRAINT {CHECK};")
    try:
        yield
    finally:
        db.run_batch(cursor, f"""
            DELETE FROM dbo.SyncQueueTypeProcedure WHERE [Type] = '{JOB_TYPE}';
            ALTER TABLE dbo.SyncQueueTypeProcedure WITH CHECK CHECK CONSTRAINT {CHECK};
        """)


def items_of(conn, job_type: str) -> dict[str, tuple]:
    """The items of ``job_type`` by entity key: (Status, AttemptNum, Response, Error)."""
    rows = db.query(conn.cursor(), "SELECT EntityKey, [Status], AttemptNum, Response, Error "
                                   "FROM dbo.SyncQueue WHERE [Type] = ?;", job_type)
    return {entity: tuple(rest) for entity, *rest in rows}


@pytest.mark.parametrize("job_procedure", [
    OTHER_JOB,  # another schema, where the procedure exists
    "tempdb.dbo.RelqTest_DrainDbo_utx",  # another database
    "Linked.tempdb.dbo.RelqTest_DrainDbo_utx",  # another server
    JOB,  # one part: it would resolve in the caller's default schema first
    "[dbo].[RelqTest_DrainDbo_utx]",  # brackets
    DBO_JOB + "; DROP TABLE dbo.SyncQueue",  # a second statement
])
def test_a_job_procedure_that_is_not_dbo_and_a_name_is_refused_at_insert_naming_the_check(
        dbo_conn, job_type: str, job_procedure: str) -> None:
    with pytest.raises(db.SqlError) as refused:
        register(dbo_conn, job_type, job_procedure)

    assert refused.value.number == CHECK_VIOLATION, str(refused.value)
    assert CHECK in refused.value.text, str(refused.value)
    assert db.query(dbo_conn.cursor(), "SELECT COUNT(*) FROM dbo.SyncQueueTypeProcedure WHERE [Type] = ?;",
                    job_type) == [(0,)]


def test_a_job_procedure_of_another_schema_is_refused_at_update_naming_the_check(
        dbo_conn, job_type: str) -> None:
    register(dbo_conn, job_type, DBO_JOB)

    with pytest.raises(db.SqlError) as refused:
        db.query(dbo_conn.cursor(), "UPDATE dbo.SyncQueueTypeProcedure SET JobProcedure = ? "
                                    "WHERE [Type] = ?;", OTHER_JOB, job_type)

    assert refused.value.number == CHECK_VIOLATION, str(refused.value)
    assert CHECK in refused.value.text, str(refused.value)
    assert db.query(dbo_conn.cursor(), "SELECT JobProcedure FROM dbo.SyncQueueTypeProcedure "
                                       "WHERE [Type] = ?;", job_type) == [(DBO_JOB,)]


def test_a_queue_admin_member_drains_the_dbo_job_it_cannot_see(member, dbo_conn, job_type: str) -> None:
    """The Agent job step's user (docs/operations.md): a QueueAdmin member, with no permission
    on the job procedure. The drain's look-up sees it as dbo, and the job runs in the member's
    name; its namesake in the other schema does not run."""
    register(dbo_conn, job_type, DBO_JOB)
    enqueue_jobs(dbo_conn, job_type, "dbo-1", "dbo-2")
    conn = member("QueueAdmin")()
    assert db.query(conn.cursor(), "SELECT OBJECT_ID(N'dbo.RelqTest_DrainDbo_utx', N'P');") == [(None,)]

    result = db.call(conn, "dbo.Drain_SyncQueue_trx", Type=job_type, LockedBy="agent/drain-dbo")

    assert result.result_sets[0] == [(2, 2, 0, 0)]  # Claimed, Completed, Failed, TakenOver
    items = items_of(dbo_conn, job_type)
    assert {entity: item[:2] for entity, item in items.items()} == {
        "dbo-1": ("Completed", 1), "dbo-2": ("Completed", 1)}
    for entity, item in items.items():
        assert item[2].startswith("dbo ran it as relq_member_"), (entity, item)


def test_the_drain_runs_nothing_for_a_row_from_before_the_check_and_gives_its_item_back_with_735714(
        member, dbo_conn, job_type: str) -> None:
    """A row the CHECK would refuse, naming a procedure of another schema that dbo owns (the
    ownership chain would run it): the drain claims the first item, runs nothing, gives it
    back unworked with 735714 and its text as its Error, and stops."""
    with before_the_check(dbo_conn):
        register(dbo_conn, job_type, OTHER_JOB)
        enqueue_jobs(dbo_conn, job_type, "old-1", "old-2")

        admin = member("QueueAdmin")()
        with pytest.raises(db.SqlError) as refused:
            db.call(admin, "dbo.Drain_SyncQueue_trx", Type=job_type, LockedBy="agent/drain-old")

        assert refused.value.number == Msg.JobProcedureRefused, str(refused.value)
        assert f"'{OTHER_JOB}'" in refused.value.text, str(refused.value)
        assert "it is not dbo.<name>" in refused.value.text, str(refused.value)
        items = items_of(dbo_conn, job_type)
        # nothing ran (no Response), nothing held, no attempt spent
        assert {entity: item[:3] for entity, item in items.items()} == {
            "old-1": ("Pending", 0, ""), "old-2": ("Pending", 0, "")}
        assert items["old-1"][3].startswith("error 735714: "), items["old-1"]
        attempts = db.query(dbo_conn.cursor(), """
            SELECT q.EntityKey, a.AttemptNum, a.LockedBy, a.Outcome
            FROM dbo.SyncQueueAttempt AS a
            INNER JOIN dbo.SyncQueue AS q ON a.EnqueuedAt = q.EnqueuedAt
            WHERE q.[Type] = ?;
        """, job_type)
        assert attempts == [("old-1", 1, "agent/drain-old", "Pending")]  # one claim, given back

"""Upgrading a database that users deployed from an earlier release, with work in
its queues, to the current project: the migrations bring it in place, nothing is
lost, and a second deploy changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relq import db
from relq.deploy.apply import deploy
from relq.errors import RelqError
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

FIRST_RELEASE = "e27a5f0652a8023b2e0587d27da03ba1f375c92d"  # the queue core, before leases
# The last release: archives without Duration, Notification's claim index without [Type].
LAST_RELEASE = "83320c47b8f1f012eae5241dc8f9b1eb4001f92b"

# The last column of each archive: its name, its type and whether it takes NULL.
ARCHIVES_LAST_COLUMN = """
SELECT OBJECT_NAME(c.object_id), c.name, TYPE_NAME(c.user_type_id), c.is_nullable
FROM sys.columns AS c
WHERE
    c.object_id IN (OBJECT_ID(N'dbo.SyncQueueArchive'), OBJECT_ID(N'dbo.NotificationArchive'))
    AND c.column_id = (SELECT MAX(m.column_id) FROM sys.columns AS m WHERE m.object_id = c.object_id);
"""


def deploy_release(commit: str, into: Path, mssql: db.Target, database: str) -> None:
    """Deploy ``database`` as users did from the release ``commit``: with that release's own
    relq (its build and deploy, in a Python process of their own), not today's, whose build
    checks the old files would not all pass."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=False)
    if archive.returncode != 0:
        pytest.fail(f"git cannot read {commit[:7]} ({archive.stderr.decode().strip()}): the upgrade "
                    f"test needs the repository's history (actions/checkout: fetch-depth: 0)")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    done = subprocess.run([sys.executable, "-c", _DEPLOY_AS_RELEASED, str(into), database], cwd=into,
                          env={**os.environ, "PYTHONPATH": str(into), "RELQ_MSSQL": mssql.conn_str},
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"release {commit[:7]} did not deploy with its own relq:\n{done.stdout}\n{done.stderr}")


# The release's relq (first on the path: PYTHONPATH), its deploy as `invoke deploy --create-db` ran it.
_DEPLOY_AS_RELEASED = """
import sys
from pathlib import Path
import relq.deploy.apply
from relq import db
root = Path(sys.argv[1]).resolve()
assert Path(relq.deploy.apply.__file__).resolve().is_relative_to(root), relq.deploy.apply.__file__
relq.deploy.apply.deploy(root, db.resolve_target(None, None), create_db=sys.argv[2])
"""


def index_shape(cursor, table: str, index: str) -> tuple[list[tuple[str, bool]], set[str], str | None]:
    """An index as the server has it: its keys in order (name, descending), its included
    columns, and its filter."""
    rows = db.query(cursor, """
        SELECT c.name, ic.is_included_column, ic.is_descending_key, i.filter_definition
        FROM sys.indexes AS i
        INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
        INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
        WHERE i.object_id = OBJECT_ID(N'dbo.' + ?) AND i.name = ?
        ORDER BY ic.is_included_column, ic.key_ordinal;""", table, index)
    keys = [(name, bool(descending)) for name, included, descending, _ in rows if not included]
    return keys, {name for name, included, _, _ in rows if included}, rows[0][3] if rows else None


def due_index(cursor, table: str = "Notification") -> tuple[list[tuple[str, bool]], set[str], str | None]:
    """IX_<table>_Due, the claim index, as the server has it."""
    return index_shape(cursor, table, f"IX_{table}_Due")


# The claim index and the health index as V0005 to V0008 leave them (the table files' shape).
CLAIM_KEYS = [("Type", False), ("Priority", True), ("ScheduledFor", False)]
CLAIM_INCLUDED = {"AttemptNum", "GroupKey", "Status"}


def assert_flat_cost_indexes(cursor) -> None:
    """Each queue's claim index keyed by type and priority band, its health index of the
    unfinished items only."""
    for table in ("SyncQueue", "Notification"):
        keys, included, where = due_index(cursor, table)
        assert (keys, included) == (CLAIM_KEYS, CLAIM_INCLUDED), table
        assert where is not None and "'Pending'" in where and "'Error'" in where, table
        _, _, where = index_shape(cursor, table, f"IX_{table}_Status")
        assert where is not None and "'Paused'" in where and "'Completed'" not in where, table


def finish_and_age(conn, entity_key: str) -> None:
    """Enqueue one sync job, claim it, complete it some milliseconds later (so that
    its Duration is more than 0), and make it two hours old for the purge."""
    cursor = conn.cursor()
    db.run_batch(cursor, f"""
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, 'CustomerSync', N'{entity_key}');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    (key, token, _, _), = db.call(conn, "dbo.Next_SyncQueue_trx", LockedBy="upgrade/1").result_sets[0]
    time.sleep(0.05)
    db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
    db.run_batch(cursor, f"UPDATE dbo.SyncQueue SET UpdatedAt = DATEADD(HOUR, -2, UpdatedAt) "
                         f"WHERE EntityKey = N'{entity_key}';")


def purge_archiving(conn) -> list[tuple]:
    """The purge as an Agent job runs it, archiving: its (Removed, Archived) row."""
    return db.call(conn, "dbo.Purge_SyncQueue_trx", OlderThanMinutes=60, Archive=True).result_sets[0]


def test_a_database_of_the_first_release_is_upgraded_with_its_work_in_place(
    mssql, new_database: str, tmp_path: Path
) -> None:
    deploy_release(FIRST_RELEASE, tmp_path / "release-1", mssql, new_database)
    conn = db.connect(db.with_database(mssql.conn_str, new_database))
    cursor = conn.cursor()
    db.run_batch(cursor, """
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey)
        VALUES (1, 'CustomerSync', N'a'), (2, 'CustomerSync', N'b');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    claimed = db.call(conn, "dbo.Next_SyncQueue_trx").result_sets[0]  # the first release's claim
    assert len(claimed) == 1

    upgrade = deploy(REPO, mssql, create_db=new_database)
    # V0001 (leases), V0002 (the claim index by type), V0003 (the archives' Duration), V0004
    # (the job procedures' CHECK), V0005 to V0008 (the claim index by band, the health index
    # of unfinished items): the first release had no archive and no T-SQL jobs, so the table
    # files made those tables as they are now, and V0003 and V0004 do nothing
    assert upgrade.counts["migration"] == 8
    again = deploy(REPO, mssql, create_db=new_database)
    assert again.plan.changes == []

    # The item claimed before leases has a holder and a lease now, so it comes back if
    # its worker is gone; the other is claimable under the new rules.
    held = db.query(cursor, "SELECT LockedBy, LeaseUntil, [Priority] FROM dbo.SyncQueue "
                            "WHERE [Status] = 'Processing';")
    assert len(held) == 1 and held[0][0] == "(claimed before leases)" and held[0][1] is not None
    assert held[0][2] == 0
    rows = db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy="upgrade-test", BatchSize=5).result_sets[0]
    assert len(rows) == 1
    # The re-created table type takes the new columns, and its procedures are back.
    db.run_batch(cursor, """
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey, DedupKey)
        VALUES (1, 'CustomerSync', N'c', N'g1', N'dedup-c');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    assert db.query(cursor, "SELECT COUNT(*) FROM dbo.SyncQueue WHERE DedupKey = N'dedup-c';")[0][0] == 1
    indexes = {name for (name,) in db.query(
        cursor, "SELECT name FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.SyncQueue');")}
    assert {f"IX_SyncQueue_{p}" for p in ("Due", "Lease", "Group", "DedupKey")} <= indexes
    assert_flat_cost_indexes(cursor)
    durations = db.query(cursor, "SELECT COL_LENGTH(N'dbo.SyncQueueArchive', N'Duration'), "
                                 "COL_LENGTH(N'dbo.NotificationArchive', N'Duration');")[0]
    assert None not in durations
    conn.close()


def test_a_database_of_the_last_release_gets_duration_in_its_archives_and_keeps_what_they_hold(
    mssql, new_database: str, tmp_path: Path
) -> None:
    """The upgrade where V0003 alters the archives (the first release had none), V0002
    rebuilds Notification's claim index and V0005 to V0008 re-key both claim indexes and
    filter both health indexes."""
    deploy_release(LAST_RELEASE, tmp_path / "release-last", mssql, new_database)
    conn = db.connect(db.with_database(mssql.conn_str, new_database))
    cursor = conn.cursor()
    durations = ("SELECT COL_LENGTH(N'dbo.SyncQueueArchive', N'Duration'), "
                 "COL_LENGTH(N'dbo.NotificationArchive', N'Duration');")
    assert db.query(cursor, durations) == [(None, None)]  # what V0003 is for
    assert due_index(cursor)[1] == {"AttemptNum", "GroupKey"}  # and V0002
    finish_and_age(conn, "before")
    # That release's purge (the same parameters as now) archives without Duration.
    assert purge_archiving(conn) == [(1, 1)]

    upgrade = deploy(REPO, mssql, create_db=new_database)
    applied = [s.path.rsplit("/", 1)[-1] for s in upgrade.plan.steps if s.kind == "migrations" and s.runs]
    assert applied == ["V0002__notification_due_index_type.sql", "V0003__archive_duration.sql",
                       "V0004__job_procedure_dbo.sql", "V0005__syncqueue_due_by_type.sql",
                       "V0006__syncqueue_status_unfinished.sql", "V0007__notification_due_by_type.sql",
                       "V0008__notification_status_unfinished.sql"]
    assert upgrade.counts["migration"] == 7
    again = deploy(REPO, mssql, create_db=new_database)
    assert again.plan.changes == []

    # The row archived before is there as it was, without a Duration; each archive has
    # the column last, as the table files create it in a new database.
    assert db.query(cursor, "SELECT EntityKey, [Status], Duration FROM dbo.SyncQueueArchive;") == [
        ("before", "Completed", None)]
    assert set(db.query(cursor, ARCHIVES_LAST_COLUMN)) == {
        ("SyncQueueArchive", "Duration", "Duration", True),
        ("NotificationArchive", "Duration", "Duration", True),
    }
    assert_flat_cost_indexes(cursor)

    # The current purge archives an item with the Duration its last attempt took.
    finish_and_age(conn, "after")
    ((duration,),) = db.query(cursor, "SELECT Duration FROM dbo.SyncQueue WHERE EntityKey = N'after';")
    assert duration is not None and duration > 0
    assert purge_archiving(conn) == [(1, 1)]
    archived = db.query(cursor, "SELECT EntityKey, Duration FROM dbo.SyncQueueArchive ORDER BY EnqueuedAt;")
    conn.close()
    assert archived == [("before", None), ("after", duration)]


JOB_CHECK = "SyncQueueTypeProcedure_IsRunBy_DboProcedure"


def test_an_upgrade_stops_at_a_job_procedure_that_is_not_dbo_and_goes_on_once_its_row_is_corrected(
    mssql, new_database: str, tmp_path: Path
) -> None:
    """The last release took any JobProcedure. The upgrade adds the CHECK WITH CHECK: a row that
    breaks it stops the deploy with error 547 naming the constraint, and nothing of that file
    is applied; once the row names dbo.<name>, the next deploy goes on and the CHECK is
    enabled and trusted. The row is the team's, never rewritten by the deploy."""
    deploy_release(LAST_RELEASE, tmp_path / "release-last", mssql, new_database)
    conn = db.connect(db.with_database(mssql.conn_str, new_database))
    cursor = conn.cursor()
    db.run_batch(cursor, "INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure) "
                         "VALUES ('CustomerSync', N'SyncCustomer_utx');")

    with pytest.raises(RelqError) as stopped:
        deploy(REPO, mssql, create_db=new_database)

    assert "547" in str(stopped.value) and JOB_CHECK in str(stopped.value), str(stopped.value)
    rows = "SELECT JobProcedure FROM dbo.SyncQueueTypeProcedure;"
    assert db.query(cursor, rows) == [("SyncCustomer_utx",)]
    assert db.query(cursor, "SELECT COUNT(*) FROM sys.check_constraints "
                            f"WHERE name = N'{JOB_CHECK}';") == [(0,)]

    db.run_batch(cursor, "UPDATE dbo.SyncQueueTypeProcedure SET JobProcedure = N'dbo.SyncCustomer_utx';")
    deploy(REPO, mssql, create_db=new_database)
    assert deploy(REPO, mssql, create_db=new_database).plan.changes == []
    assert db.query(cursor, "SELECT is_disabled, is_not_trusted FROM sys.check_constraints "
                            f"WHERE name = N'{JOB_CHECK}';") == [(False, False)]
    assert db.query(cursor, rows) == [("dbo.SyncCustomer_utx",)]
    conn.close()

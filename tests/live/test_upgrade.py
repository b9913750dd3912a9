"""Upgrading a database that users deployed from an earlier release, with work in
its queues, to the current project: the migrations bring it in place, nothing is
lost, and a second deploy changes nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

FIRST_RELEASE = "e27a5f0652a8023b2e0587d27da03ba1f375c92d"  # the queue core, before leases


def checkout(commit: str, into: Path) -> Path:
    """The project's database/ and tests_tsqlt/ as they were at ``commit``."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "database", "tests_tsqlt"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        pytest.fail(f"git cannot read {commit[:7]} ({archive.stderr.decode().strip()}): the upgrade "
                    f"test needs the repository's history (actions/checkout: fetch-depth: 0)")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def test_a_database_of_the_first_release_is_upgraded_with_its_work_in_place(
    mssql, new_database: str, tmp_path: Path
) -> None:
    deploy(checkout(FIRST_RELEASE, tmp_path / "release-1"), mssql, create_db=new_database)
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
    # V0001 (leases), V0002 (the claim index by type), V0003 (the archives' Duration: the
    # first release had no archive, so the table files made them with it and it does nothing)
    assert upgrade.counts["migration"] == 3
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
    included = {name for (name,) in db.query(cursor, """
        SELECT c.name FROM sys.indexes AS i
        INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
        INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
        WHERE i.name = N'IX_Notification_Due' AND ic.is_included_column = 1;""")}
    assert included == {"AttemptNum", "GroupKey", "Type"}
    durations = db.query(cursor, "SELECT COL_LENGTH(N'dbo.SyncQueueArchive', N'Duration'), "
                                 "COL_LENGTH(N'dbo.NotificationArchive', N'Duration');")[0]
    assert None not in durations
    conn.close()

"""A queue made by `invoke new-queue` against a real SQL Server: it deploys into a
fresh database with the rest of the project, a round trip works through its own
procedures (enqueue, batch claim, report, purge), its subtype table is written with
its items, shown, archived and purged with them, a worker role may claim from it,
and the health views count it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from relq import db
from relq.live import throwaway_database
from relq.scaffold import new_queue, parse_subtype
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.InvoiceItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey, Template, Copies)
VALUES (1, 'InvoicePdf', N'INV-1', N'pdf:INV-1', N'classic', 2),
       (2, 'InvoiceXml', N'INV-1', NULL, NULL, NULL),
       (3, 'InvoicePdf', N'INV-1', N'pdf:INV-1', N'modern', NULL);
EXEC dbo.Add_Invoice_trx @Items = @Items;
"""
# The exact purge (@Keys) of every finished item, into dbo.InvoiceArchive, whatever its age.
PURGE_FINISHED = """
SET NOCOUNT ON;
DECLARE @Keys NVARCHAR(MAX) = (
    SELECT v.EnqueuedAt, v.UpdatedAt FROM dbo.Worker_Invoice_V AS v
    WHERE v.[Status] = 'Completed' FOR JSON PATH
);
EXEC dbo.Purge_Invoice_trx @Keys = @Keys, @Archive = 1;
"""


@pytest.fixture(scope="module")
def invoice_database(mssql: db.Target, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("new-queue") / "project"
    for name in ("database", "tests_tsqlt"):
        shutil.copytree(REPO / name, root / name)
    new_queue(Path(root), "Invoice", ["InvoicePdf", "InvoiceXml"],
              subtypes=(parse_subtype("InvoicePdf: Template NVARCHAR(100), Copies INT NULL"),))
    with throwaway_database(root, mssql, prefix="relq_newqueue") as database:
        yield db.with_database(mssql.conn_str, database)


def test_a_new_queue_carries_items_from_enqueue_to_purge(invoice_database: str) -> None:
    conn = db.connect(invoice_database)
    try:
        added = db.query(conn.cursor(), ENQUEUE)
        assert [row[-1] for row in added] == [False, False, True]  # the third is the first's duplicate
        assert added[2][0] == added[0][0]

        claimed = db.call(conn, "dbo.Next_Invoice_Batch_trx", LockedBy="live/1", BatchSize=10).result_sets[0]
        assert len(claimed) == 2
        for key, token, *_ in claimed:
            db.call(conn, "dbo.Modify_Invoice_trx", EnqueuedAt=key, UpdatedAt=token,
                    Status="Completed", Response="done")
        states = db.query(conn.cursor(), "SELECT [Status], COUNT(*) FROM dbo.Worker_Invoice_V "
                                         "GROUP BY [Status];")
        assert states == [("Completed", 2)]
        shown = db.query(conn.cursor(), "SELECT [Type], Template, Copies FROM dbo.Worker_Invoice_V "
                                        "ORDER BY EnqueuedAt;")
        assert shown == [("InvoicePdf", "classic", 2), ("InvoiceXml", None, None)]  # the duplicate's kept

        # The health view counts the unfinished states only: none is left.
        health = db.query(conn.cursor(), "SELECT [Status], Items FROM dbo.QueueHealth_V "
                                         "WHERE [Queue] = 'Invoice' ORDER BY [Status];")
        assert health == [("Error", 0), ("Paused", 0), ("Pending", 0), ("Processing", 0)]
        attempts = db.query(conn.cursor(),
                            "SELECT COUNT(*) FROM dbo.InvoiceAttempt WHERE Outcome = 'Completed';")
        assert attempts == [(2,)]

        # Finished a moment ago: a purge of items older than a minute leaves them.
        purged = db.call(conn, "dbo.Purge_Invoice_trx", OlderThanMinutes=1).result_sets[0]
        assert purged == [(0, 0)]
        assert db.query(conn.cursor(), PURGE_FINISHED) == [(2, 2)]
        archived = db.query(conn.cursor(), "SELECT [Type], Template, Copies FROM dbo.InvoiceArchive "
                                           "ORDER BY EnqueuedAt;")
        assert archived == [("InvoicePdf", "classic", 2), ("InvoiceXml", None, None)]
        left = db.query(conn.cursor(), "SELECT (SELECT COUNT(*) FROM dbo.Invoice), "
                                       "(SELECT COUNT(*) FROM dbo.Invoice_InvoicePdf);")
        assert left == [(0, 0)]  # the subtype row went with its item (ON DELETE CASCADE)
    finally:
        conn.close()


def test_a_new_queue_refuses_an_item_without_its_subtype_columns(invoice_database: str) -> None:
    conn = db.connect(invoice_database)
    try:
        with pytest.raises(db.SqlError) as refused:
            db.query(conn.cursor(), "SET NOCOUNT ON; DECLARE @Items dbo.InvoiceItemList; "
                                    "INSERT INTO @Items (ItemNo, [Type], EntityKey) "
                                    "VALUES (1, 'InvoicePdf', N'X'); "
                                    "EXEC dbo.Add_Invoice_trx @Items = @Items;")
        assert refused.value.number == 735707
        assert "item 1: Template is required for type InvoicePdf" in refused.value.text
        rows = db.query(conn.cursor(), "SELECT COUNT(*) FROM dbo.Invoice WHERE EntityKey = N'X';")
        assert rows == [(0,)]
    finally:
        conn.close()


def test_a_worker_role_may_claim_from_a_new_queue_and_not_read_its_table(invoice_database: str) -> None:
    conn = db.connect(invoice_database)
    try:
        db.run_batch(conn.cursor(), "CREATE USER relq_newqueue_worker WITHOUT LOGIN; "
                                    "ALTER ROLE QueueWorker ADD MEMBER relq_newqueue_worker;")
        rows = db.query(conn.cursor(), "EXECUTE AS USER = N'relq_newqueue_worker'; "
                                       "EXEC dbo.Next_Invoice_trx @LockedBy = N'live/2'; REVERT;")
        assert rows == []  # nothing is due, and the claim was allowed
        with pytest.raises(db.SqlError) as refused:
            db.query(conn.cursor(), "EXECUTE AS USER = N'relq_newqueue_worker'; "
                                    "SELECT TOP (1) EnqueuedAt FROM dbo.Invoice;")
        assert refused.value.number == 229  # permission denied
    finally:
        db.run_batch(conn.cursor(), "IF USER_NAME() <> N'dbo' REVERT;")
        conn.close()

"""The relational queue core against a real SQL Server: concurrent workers drain
a backlog through the procedures, exactly as applications call them."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import RCSI, REPO, set_read_committed_snapshot

pytestmark = pytest.mark.mssql

ITEMS = 10_000
WORKERS = 8
RETRIED = 10  # every tenth item fails its first attempt and is retried
DEADLINE_S = 600

CHUNK = 2_500  # Add_SyncQueue_trx takes at most 4,000 items a call
QUERY_TIMEOUT_S = 120  # a lock wait that never ends fails the worker instead of hanging the run

ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey)
SELECT TOP ({count})
    x.n,
    'CustomerSync',
    N'item-' + CAST({offset} + x.n AS NVARCHAR(10))
FROM (
    SELECT ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n
    FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b
) AS x
ORDER BY x.n;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""


def drain(conn_str: str, claims: list, errors: list, deadline: float) -> None:
    """A worker: claim, read the item through the worker view, report, until nothing is left."""
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    try:
        cursor = conn.cursor()
        while time.monotonic() < deadline:
            claimed = db.call(conn, "dbo.Next_SyncQueue_trx").result_sets[0]
            if not claimed:
                left = db.query(cursor, "SELECT COUNT(*) FROM dbo.SyncQueue "
                                        "WHERE [Status] NOT IN ('Completed', 'Failed');")[0][0]
                if left == 0:
                    return
                time.sleep(0.02)  # others hold the rest, or a retry is not due yet
                continue
            key, token = claimed[0][:2]
            entity, attempt = db.query(
                cursor, "SELECT v.EntityKey, v.AttemptNum FROM dbo.Worker_SyncQueue_V AS v "
                        "WHERE v.EnqueuedAt = ?;", key)[0]
            claims.append((key, attempt))
            number = int(entity.removeprefix("item-"))
            outcome = "Error" if attempt == 1 and number % RETRIED == 0 else "Completed"
            report = db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token,
                             Status=outcome, Error="planted failure" if outcome == "Error" else None)
            assert report.return_code == 0
        errors.append("deadline passed with work left")
    except Exception as exc:  # reported by the test, with the other workers' results
        errors.append(repr(exc))
    finally:
        conn.close()


@RCSI
def test_eight_workers_drain_ten_thousand_items_each_claimed_once_per_attempt(
    mssql, new_database, rcsi: bool
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    set_read_committed_snapshot(mssql, new_database, rcsi)
    conn_str = db.with_database(mssql.conn_str, new_database)
    conn = db.connect(conn_str)
    for offset in range(0, ITEMS, CHUNK):
        db.run_batch(conn.cursor(), ENQUEUE.format(count=min(CHUNK, ITEMS - offset), offset=offset))
    enqueued = {row[0] for row in db.query(conn.cursor(), "SELECT EnqueuedAt FROM dbo.SyncQueue;")}
    assert len(enqueued) == ITEMS

    claims: list = []
    errors: list = []
    deadline = time.monotonic() + DEADLINE_S
    threads = [threading.Thread(target=drain, args=(conn_str, claims, errors, deadline))
               for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE_S + QUERY_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a worker is still running after the deadline"
    assert errors == []

    per_attempt = Counter(claims)
    assert max(per_attempt.values()) == 1  # no item was claimed twice for the same attempt
    assert {key for key, _ in claims} == enqueued  # none was lost
    final = db.query(conn.cursor(), "SELECT EnqueuedAt, [Status], AttemptNum, EntityKey FROM dbo.SyncQueue;")
    conn.close()
    assert Counter(status for _, status, _, _ in final) == Counter({"Completed": ITEMS})  # none left
    claims_per_item = Counter(key for key, _ in claims)
    for key, _, attempts, entity in final:
        expected = 2 if int(entity.removeprefix("item-")) % RETRIED == 0 else 1
        assert attempts == claims_per_item[key] == expected

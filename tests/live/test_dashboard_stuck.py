"""Stuck work against a real SQL Server: a ``python -m relq.worker`` process takes a sync job whose
handler never ends, and is killed with SIGKILL mid-item. Its item stays in Processing, named by
the dead worker's slot (LockedBy); once its lease runs out, the dashboard's stuck page lists it
first, past its lease, with that LockedBy, the workers view names the slot, and the overview's
past-lease count links to the page. The page is read as a member of QueueMonitor and QueueAdmin
(tests/conftest.py's ``member``), through the worker view. And with 300 items in Processing, each
of the page's reads is one read of the lease index that stops after its rows, with no sort: the
actual plans, as dbo (SET STATISTICS XML needs SHOWPLAN)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from bench import plans
from relq import db
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import LeasePlace, SqlStore, holders_sql, processing_sql
from tests.conftest import REPO
from tests.live.jobs import enqueue_jobs
from tests.live.stuck_handlers import JOB_TYPE

pytestmark = pytest.mark.mssql

LEASE_S = 4  # 'syncqueue.leaseSeconds' while the test runs: the dead worker's lease runs out soon
CLAIM_DEADLINE_S = 60
LEASE_DEADLINE_S = 60
SETTING = "syncqueue.leaseSeconds"


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Any]:
    """As dbo: the job type, no items of it, and a short lease for SyncQueue, put back afterwards
    (and the test's items removed, so that no past-lease item stays behind for other tests)."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    cursor = conn.cursor()
    db.run_batch(cursor, f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
    """)
    before = db.query(cursor, "SELECT ValInt FROM dbo.AppSettings WHERE Param = ?;", SETTING)
    db.run_batch(cursor, f"""
        MERGE dbo.AppSettings AS target
        USING (VALUES ('{SETTING}', {LEASE_S})) AS source (Param, ValInt) ON target.Param = source.Param
        WHEN MATCHED THEN UPDATE SET ValInt = source.ValInt
        WHEN NOT MATCHED THEN INSERT (Param, ValInt) VALUES (source.Param, source.ValInt);
    """)
    try:
        yield conn
    finally:
        if before:
            db.query(cursor, "UPDATE dbo.AppSettings SET ValInt = ? WHERE Param = ?;", before[0][0], SETTING)
        else:
            db.query(cursor, "DELETE FROM dbo.AppSettings WHERE Param = ?;", SETTING)
        db.run_batch(cursor, f"DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';")
        conn.close()


def held(dbo, entity: str) -> tuple[Any, str | None, bool] | None:
    """The test's item if it is in Processing: its key, LockedBy, and whether its lease ran out."""
    rows = db.query(dbo.cursor(), f"""
        SELECT EnqueuedAt, LockedBy, CASE WHEN LeaseUntil < SYSUTCDATETIME() THEN 1 ELSE 0 END
        FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}' AND EntityKey = ? AND [Status] = 'Processing';""",
                    entity)
    return (rows[0][0], rows[0][1], bool(rows[0][2])) if rows else None


def cells_of(row: str) -> list[str]:
    """The text of each td of a table row's HTML."""
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def tail(path: Path) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-20:])


@pytest.mark.skipif(os.name != "posix", reason="kills a worker with SIGKILL (POSIX)")
def test_a_worker_killed_mid_item_shows_on_the_stuck_page_with_its_locked_by(
        mssql, live_database: str, dbo, member, tmp_path: Path) -> None:
    entity = f"stuck-{secrets.token_hex(3)}"
    enqueue_jobs(dbo, JOB_TYPE, entity)
    name = f"relq-stuck-{secrets.token_hex(3)}"  # a name of its own: no other worker's slot
    env = {**os.environ, "RELQ_MSSQL": db.with_database(mssql.conn_str, live_database),
           "PYTHONUNBUFFERED": "1"}
    err = tmp_path / "worker.err"
    with err.open("wb") as stderr:
        worker = subprocess.Popen(
            [sys.executable, "-m", "relq.worker", "--queue", "SyncQueue", "--type", JOB_TYPE,
             "--handlers", "tests.live.stuck_handlers", "--name", name, "--concurrency", "1"],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + CLAIM_DEADLINE_S
        while (found := held(dbo, entity)) is None:
            assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{tail(err)}"
            assert time.monotonic() < deadline, f"the worker never claimed the item:\n{tail(err)}"
            time.sleep(0.2)
        key, locked_by, _ = found
        assert locked_by == f"{name}/1"
        worker.send_signal(signal.SIGKILL)  # mid-item: its handler is still running
        worker.wait(30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()

    # Nobody renews the lease now: it runs out, and the item stays in Processing, still named.
    deadline = time.monotonic() + LEASE_DEADLINE_S
    while not (found := held(dbo, entity))[2]:
        assert time.monotonic() < deadline, f"the lease never ran out: {found}"
        time.sleep(0.5)
    assert found[1] == locked_by

    app = TestClient(create_app(SqlStore(member("QueueMonitor", "QueueAdmin")), Settings()))
    page = app.get("/queues/SyncQueue/processing")
    assert page.status_code == 200, page.text
    iso = key.isoformat(timespec="microseconds")
    row = re.search(rf'<tr class="alarm">\s*<td><a href="[^"]*/items/{re.escape(iso)}">(.*?)</tr>',
                    page.text, re.S)
    assert row, page.text  # listed, as an alarm row: past its lease
    cells = cells_of(row[1])
    assert cells[0].endswith(" past") and cells[1:3] == [locked_by, JOB_TYPE]  # lease, worker, type
    worker = re.search(rf'<tr class="alarm" data-worker="{re.escape(locked_by)}">(.*?)</tr>', page.text, re.S)
    assert worker, page.text
    figures = cells_of(worker[1])  # past lease, how long past the oldest lease, items: its one item
    assert figures[0] == "1" and figures[1].endswith(" past") and figures[2] == "1"

    overview = app.get("/")
    sync = re.search(r'data-queue="SyncQueue">(.*?)</tr>', overview.text, re.S)[1]
    assert re.search(r'<a href="[^"]*/queues/SyncQueue/processing" title="the items past their lease', sync)


def plan_of(dbo: Any, sql: str, params: list[Any]) -> tuple[list[str], list[plans.Access]]:
    """The actual plans of ``sql`` and the reads of tables in them."""
    cursor = dbo.cursor()
    try:
        sets, columns = db.result_sets(cursor, f"SET STATISTICS XML ON; {sql} SET STATISTICS XML OFF;",
                                       *params)
    finally:
        cursor.close()
    documents = plans.showplans(sets, columns)
    assert documents, "no plan came back"
    return documents, [a for document in documents for a in plans.accesses(document)]


def test_each_read_of_the_stuck_page_reads_the_lease_index_up_to_its_page_and_sorts_nothing(dbo) -> None:
    # one batch claim: the 300 items share one LeaseUntil, so the next page must seek past the
    # row's key within that lease, not read from the lease's first item
    held_items, page, cap = 300, 51, 100
    enqueue_jobs(dbo, JOB_TYPE, *(f"plan-{n}" for n in range(held_items)))
    claimed = db.call(dbo, "dbo.Next_SyncQueue_Batch_trx", LockedBy=f"relq-plan-{secrets.token_hex(3)}/1",
                      BatchSize=held_items, Type=JOB_TYPE).result_sets[0]
    assert len(claimed) == held_items
    first = SqlStore(lambda: dbo).processing("SyncQueue", None, page)
    assert len(first) == page
    after = LeasePlace(first[-1]["LeaseUntil"], first[-1]["EnqueuedAt"])
    reads = [("first page", *processing_sql("SyncQueue", None, page), page),
             ("next page", *processing_sql("SyncQueue", after, page), page),
             ("workers", *holders_sql("SyncQueue", cap), cap)]
    for what, sql, params, bound in reads:
        documents, accesses = plan_of(dbo, sql, params)
        assert all('PhysicalOp="Sort"' not in d for d in documents), what  # read in the index's order
        queue = [a for a in accesses if a.table == "SyncQueue"]
        indexes = {a.index for a in queue if a.physical_op not in plans.LOOKUPS}
        assert indexes == {"IX_SyncQueue_Lease"}, (what, queue)
        assert [a.table for a in accesses if a.table != "SyncQueue"] == [], (what, accesses)
        for a in queue:  # nothing read beyond the page (or the workers' cap), however many are held
            measure = a.executions if a.physical_op in plans.LOOKUPS else a.rows_read
            assert measure is not None and measure <= bound + 1, (what, a)
        if what == "next page":
            sought = [a for a in queue if a.index == "IX_SyncQueue_Lease"]
            assert all(a.physical_op == "Index Seek" and a.seek_columns[:1] == ("LeaseUntil",)
                       for a in sought), sought

"""A bulk Retry through the dashboard over a deployed database, beside running workers: the
list of a job type's Failed items whose error contains 404 is counted, confirmed and retried in
batches by the dashboard's job (as a member of QueueMonitor and QueueAdmin), while relq's worker
(four slots) claims what it retries and fails some of it again with a 404, which puts those items
back in the list behind the job's reading. Then: every item of the list was retried exactly once
(its history has one attempt after the retry), none outside it was touched (another error,
another type, items that failed with a 404 after the count), and the job counted what it did.
A bulk Purge of finished items leaves the one whose row another session holds, and says so."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from relq import db
from relq.dashboard import bulk
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import SqlStore
from relq.worker.cli import sql_connector
from relq.worker.handlers import Handlers, Item, Permanent
from relq.worker.procedures import SqlProcedures
from relq.worker.runtime import Settings as WorkerSettings
from relq.worker.runtime import Worker

pytestmark = pytest.mark.mssql

JOB_TYPE = "RelqBulkJob"  # types of their own, so that no other test's item is claimed or listed here
OTHER_TYPE = "RelqBulkOther"
CSRF = "live-bulk-csrf"
ITEMS = 600  # of JOB_TYPE: two in three fail with a 404 (the list), one in three with a 500
LATE = 40  # enqueued after the count, before the confirmation: the workers fail them with a 404
BATCH = 25  # the job's batch here, so that it reads the list many times while the workers work
DEADLINE_S = 300


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Any]:
    """As dbo: the job types, and no items of them yet."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    conn.timeout = 120
    db.run_batch(conn.cursor(), f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{OTHER_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{OTHER_TYPE}');
        DELETE FROM dbo.SyncQueue WHERE [Type] IN ('{JOB_TYPE}', '{OTHER_TYPE}');
    """)
    yield conn
    conn.close()


def enqueue(conn: Any, job_type: str, entities: list[str]) -> None:
    """One SyncQueue item per entity, in calls of 500 (Add_SyncQueue_trx takes up to 4,000)."""
    for at in range(0, len(entities), 500):
        chunk = entities[at:at + 500]
        values = ", ".join(f"({n}, '{job_type}', N'{e}')" for n, e in enumerate(chunk, start=1))
        db.run_batch(conn.cursor(), f"""
            SET NOCOUNT ON;
            DECLARE @Items dbo.SyncQueueItemList;
            INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES {values};
            EXEC dbo.Add_SyncQueue_trx @Items = @Items;
        """)


def fail_all(conn: Any, job_type: str, error_of: dict[str, str]) -> None:
    """Claim every Pending item of ``job_type`` and report it Failed with its entity's error."""
    procedures = SqlProcedures(conn, "SyncQueue")
    while claims := procedures.claim("bulk-setup/1", 100, 0, type=job_type):
        for claim in claims:
            entity = procedures.read(claim).fields["EntityKey"]
            _, status = procedures.report(claim, "Failed", error=error_of[entity])
            assert status == "Failed"


def items_of(conn: Any, job_type: str) -> dict[str, tuple[datetime, str, str, int]]:
    """Each item of ``job_type`` by entity: (key, status, error, attempts in its history)."""
    rows = db.query(conn.cursor(), """
        SELECT q.EntityKey, q.EnqueuedAt, q.[Status], q.Error,
            (SELECT COUNT(*) FROM dbo.SyncQueueAttempt AS a WHERE a.EnqueuedAt = q.EnqueuedAt) AS Attempts
        FROM dbo.SyncQueue AS q WHERE q.[Type] = ?;""", job_type)
    return {entity: (key, status, error, attempts) for entity, key, status, error, attempts in rows}


def hidden(html: str, name: str) -> str:
    return html.split(f'name="{name}" value="', 1)[1].split('"', 1)[0]


def until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_bulk_retry_beside_running_workers_touches_each_listed_item_once_and_nothing_else(
        mssql, live_database, dbo, member, monkeypatch) -> None:
    monkeypatch.setattr(bulk, "BATCH", BATCH)
    entities = [f"bulk-{n:04d}" for n in range(ITEMS)]
    error_of = {e: ("HTTP 404 from the CRM: no such customer" if n % 3 else "HTTP 500 from the CRM")
                for n, e in enumerate(entities)}
    others = [f"other-{n:03d}" for n in range(30)]
    enqueue(dbo, JOB_TYPE, entities)
    enqueue(dbo, OTHER_TYPE, others)
    fail_all(dbo, JOB_TYPE, error_of)
    fail_all(dbo, OTHER_TYPE, dict.fromkeys(others, "HTTP 404 from the CRM: no such customer"))
    before = items_of(dbo, JOB_TYPE)
    listed = {before[e][0] for e in entities if "404" in error_of[e]}
    assert len(listed) == 400

    # relq's worker, on the type: half the retried items complete, half fail again with a 404 (back
    # in the list, behind the job's reading); the late ones fail with a 404 after the count.
    handlers = Handlers()

    @handlers.register("SyncQueue", JOB_TYPE)
    def sync(item: Item) -> str:
        entity = item.fields["EntityKey"]
        if entity.startswith("late-") or int(entity.rsplit("-", 1)[1]) % 2:
            raise Permanent("HTTP 404 from the CRM again")
        return f"synced {entity}"

    conn_str = db.with_database(mssql.conn_str, live_database)
    worker = Worker(WorkerSettings("SyncQueue", "bulk-worker", concurrency=4, batch_size=5, grace_s=10,
                                   type=JOB_TYPE), handlers, sql_connector(conn_str, "SyncQueue"))
    working = threading.Thread(target=worker.run, daemon=True)
    working.start()

    store = SqlStore(member("QueueMonitor", "QueueAdmin"))
    acted: list[tuple[str, datetime]] = []
    reads: list[Any] = []
    act, read = store.act, store.items

    def recording_act(queue: str, action: str, key: datetime, *args: Any) -> dict[str, Any]:
        acted.append((action, key))
        return act(queue, action, key, *args)

    def recording_items(queue: str, where: Any, limit: int) -> list[dict[str, Any]]:
        reads.append((where, limit))
        return read(queue, where, limit)

    store.act, store.items = recording_act, recording_items
    app = TestClient(create_app(store, Settings(allow_actions=True, csrf=CSRF)), follow_redirects=False)
    url = "/queues/SyncQueue/bulk?" + urlencode({"status": "Failed", "type": JOB_TYPE, "error": "404",
                                                 "scope": "list", "action": "Retry"})
    try:
        page = app.get(url)
        assert page.status_code == 200, page.text
        assert f"Retry the 400 Failed {JOB_TYPE} items of SyncQueue whose error contains" in page.text
        # After the count, before the confirmation: items that fail with a 404 (the workers fail them).
        enqueue(dbo, JOB_TYPE, [f"late-{n:03d}" for n in range(LATE)])

        def late_failed() -> int:
            return sum(e.startswith("late-") and v[1] == "Failed" for e, v in items_of(dbo, JOB_TYPE).items())

        until(lambda: late_failed() == LATE, "the workers to fail the late items")
        started = app.post(url, data={"csrf": CSRF, "confirmed": "400", "upto": hidden(page.text, "upto")})
        assert started.status_code == 303, started.text
        job = started.headers["location"].removeprefix("http://testserver")

        def ended() -> bool:
            return app.get(job + "/progress.json").json()["state"] not in ("running", "stopping")

        until(ended, "the bulk job to end")
        state = app.get(job + "/progress.json").json()
        until(lambda: not db.query(dbo.cursor(), "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Type] = ? "
                                                 "AND [Status] IN ('Pending', 'Processing', 'Error');",
                                   JOB_TYPE)[0][0], "the workers to finish what was retried")
    finally:
        worker.stop()
        working.join(60)
        store.close()
    assert worker.failure is None

    assert (state["state"], state["confirmed"], state["problem"]) == ("done", 400, None)
    keys = [key for _, key in acted]
    assert {action for action, _ in acted} == {"Retry"}
    assert len(keys) == len(set(keys)), [k for k, n in Counter(keys).items() if n > 1]  # none twice
    assert set(keys) == listed  # each listed item, and none outside the list
    assert (state["touched"], state["done"], state["stale"], state["refused"]) == (400, 400, 0, 0)
    assert len([r for r in reads if r[1] == BATCH]) >= 400 // BATCH  # in batches, read again each time

    after = items_of(dbo, JOB_TYPE)
    for entity in entities:
        _, status, error, attempts = after[entity]
        if "404" in error_of[entity]:  # retried once: one attempt more than before, whatever it ended
            assert attempts == before[entity][3] + 1, entity
            assert status == ("Failed" if int(entity.rsplit("-", 1)[1]) % 2 else "Completed"), entity
        else:  # another error: never touched
            assert (status, error, attempts) == ("Failed", error_of[entity], before[entity][3]), entity
    late = {e: v for e, v in after.items() if e.startswith("late-")}
    assert len(late) == LATE and {v[1] for v in late.values()} == {"Failed"}
    assert {v[3] for v in late.values()} == {1} and not {v[0] for v in late.values()} & set(keys)
    assert {(s, a) for _, s, _, a in items_of(dbo, OTHER_TYPE).values()} == {("Failed", 1)}


def test_a_bulk_purge_removes_the_listed_finished_items_and_leaves_one_another_session_holds(
        dbo, member) -> None:
    entities = [f"purge-{n:02d}" for n in range(20)]
    enqueue(dbo, JOB_TYPE, entities)
    procedures = SqlProcedures(dbo, "SyncQueue")
    while claims := procedures.claim("bulk-setup/1", 100, 0, type=JOB_TYPE):
        for claim in claims:
            assert procedures.report(claim, "Completed", response="synced")[1] == "Completed"
    before = items_of(dbo, JOB_TYPE)
    held_key = before["purge-03"][0]
    store = SqlStore(member("QueueMonitor", "QueueAdmin"))
    app = TestClient(create_app(store, Settings(allow_actions=True, csrf=CSRF)), follow_redirects=False)
    url = "/queues/SyncQueue/bulk?" + urlencode({"status": "Completed", "type": JOB_TYPE, "scope": "list",
                                                 "action": "Purge"})
    page = app.get(url)
    assert f"Purge the 20 Completed {JOB_TYPE} items of SyncQueue?" in page.text, page.text
    # Another session holds one item's row (as an operator's Retry_ would, mid-transaction): the
    # purge's READPAST passes over it, and the job says so.
    db.query(dbo.cursor(), "BEGIN TRANSACTION; SELECT q.EnqueuedAt FROM dbo.SyncQueue AS q "
                           "WITH (UPDLOCK, ROWLOCK) WHERE q.EnqueuedAt = CAST(? AS DATETIME2(7));", held_key)
    try:
        started = app.post(url, data={"csrf": CSRF, "confirmed": "20", "upto": hidden(page.text, "upto")})
        assert started.status_code == 303, started.text
        job = started.headers["location"].removeprefix("http://testserver")
        until(lambda: app.get(job + "/progress.json").json()["state"] != "running", "the purge to end")
        state = app.get(job + "/progress.json").json()
    finally:
        db.run_batch(dbo.cursor(), "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;")
        store.close()
    assert (state["state"], state["touched"], state["done"], state["stale"], state["refused"]) == (
        "done", 20, 19, 0, 1)
    assert state["reasons"] == {bulk.HELD: 1}
    assert set(items_of(dbo, JOB_TYPE)) == {"purge-03"}

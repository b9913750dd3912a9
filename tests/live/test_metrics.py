"""/metrics' counters over a deployed database, read as a QueueMonitor member (a database
user without login, impersonated on the store's connection, as tests/live/test_dashboard.py
does): they advance by exactly what a worker did between two scrapes, an attempt longer
than the window is counted once when it ends, and each read is a seek of every queue's
index, whatever the history holds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from bench import plans
from relq import db
from relq.dashboard.app import Settings, create_app
from relq.dashboard.metrics import Counters, QueueTotals
from relq.dashboard.store import AttemptKey, SqlStore, counter_batch, counter_reading, followed_batches
from relq.scaffold.catalogue import load
from relq.worker.procedures import SqlProcedures
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

JOB_TYPE = "RelqMetricsJob"  # a type of its own, so that no other test's item is claimed here


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Any]:
    """As dbo: the job type, and no items of it yet."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    db.run_batch(conn.cursor(), f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
    """)
    yield conn
    db.run_batch(conn.cursor(), f"DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';")
    conn.close()


def enqueue(dbo, n: int) -> None:
    rows = ", ".join(f"({i}, '{JOB_TYPE}', N'metrics-test/{i}')" for i in range(1, n + 1))
    db.run_batch(dbo.cursor(), f"""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES {rows};
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)


def figures(text: str) -> dict[tuple, float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def of_sync_queue(got: dict[tuple, float]) -> dict[str, float]:
    """SyncQueue's counters, and its histogram's count per outcome."""
    wanted = {f"relq_queue_{c}_total": c for c in ("enqueued", "completed", "failed", "retried")}
    found = {wanted[name]: v for (name, labels), v in got.items()
             if name in wanted and labels == (("queue", "SyncQueue"),)}
    for (name, labels), v in got.items():
        if name == "relq_queue_attempt_duration_seconds_count" and ("queue", "SyncQueue") in labels:
            found[f"durations {dict(labels)['outcome']}"] = v
    return found


def test_the_counters_advance_by_exactly_what_a_worker_did_between_two_scrapes(dbo, member) -> None:
    app = TestClient(create_app(SqlStore(member("QueueMonitor")), Settings(csrf="x")))
    first = app.get("/metrics")
    assert first.status_code == 200, first.text
    before = of_sync_queue(figures(first.text))
    assert before["completed"] == 0 and before["enqueued"] == 0  # the first scrape counts nothing

    enqueue(dbo, 4)
    worker = SqlProcedures(dbo, "SyncQueue")
    claims = worker.claim("metrics-test/1", 4, 0, type=JOB_TYPE)
    assert len(claims) == 4
    for claim, outcome in zip(claims, ("Completed", "Error", "Failed", "Pending"), strict=True):
        worker.report(claim, outcome, error=None if outcome == "Completed" else "metrics test")

    after = of_sync_queue(figures(app.get("/metrics").text))
    moved = {name: after[name] - before[name] for name in after}
    assert moved == {"enqueued": 4, "completed": 1, "failed": 1, "retried": 1, "durations Completed": 1,
                     "durations Failed": 1, "durations Error": 1}  # the released attempt counts nowhere
    again = of_sync_queue(figures(app.get("/metrics").text))
    assert again == after  # counted once


def test_an_attempt_longer_than_the_window_is_counted_once_when_it_ends(dbo, member) -> None:
    store = SqlStore(member("QueueMonitor"))
    counters = Counters(window_s=1.0)
    counters.scrape(store)
    enqueue(dbo, 1)
    worker = SqlProcedures(dbo, "SyncQueue")
    [claim] = worker.claim("metrics-test/long", 1, 0, type=JOB_TYPE)
    time.sleep(1.5)
    counters.scrape(store)
    time.sleep(1.5)
    counters.scrape(store)  # its StartedAt is now behind the window: it is followed by its key
    assert [k.enqueued_at for k in counters.followed if k.queue == "SyncQueue"] == [claim.key]
    done = counters.totals().get("SyncQueue", QueueTotals()).attempts["Completed"]
    worker.report(claim, "Completed")
    counters.scrape(store)
    counters.scrape(store)
    assert counters.totals()["SyncQueue"].attempts["Completed"] == done + 1
    assert not any(k.enqueued_at == claim.key for k in counters.followed)


def test_a_monitor_reads_the_counters_views_and_no_attempt_text(dbo, member) -> None:
    enqueue(dbo, 1)
    worker = SqlProcedures(dbo, "SyncQueue")
    [claim] = worker.claim("metrics-test/monitor", 1, 0, type=JOB_TYPE)
    worker.report(claim, "Completed")
    conn = member("QueueMonitor")()
    cursor = conn.cursor()
    keys = db.query(cursor, "SELECT COUNT(*) FROM dbo.QueueItemKey_V WHERE [Queue] = 'SyncQueue' "
                            "AND EnqueuedAt = CAST(? AS DATETIME2(7));", claim.key)
    ended = db.query(cursor, "SELECT Outcome FROM dbo.QueueAttemptOutcome_V WHERE [Queue] = 'SyncQueue' "
                             "AND EnqueuedAt = CAST(? AS DATETIME2(7));", claim.key)
    assert keys == [(1,)] and ended == [("Completed",)]
    with pytest.raises(db.SqlError) as refused:
        db.query(cursor, "SELECT TOP (1) Error FROM dbo.QueueAttempt_V;")
    assert refused.value.number == 229


HISTORY = 20_000  # finished items a queue keeps, with an attempt each, from long ago
OLD = "2001-01-01"  # their keys: far behind any item a test enqueues, and gone at the end


def keep_history(dbo, queue) -> None:
    """HISTORY finished items of ``queue`` from 2001, each with its attempt (as dbo: keys
    long before the queue's own, which Add_ would never hand out)."""
    table, entity = "dbo." + queue.name, "EntityKey, " if queue.shape == "job" else ""
    value = "N'metrics-history', " if queue.shape == "job" else ""
    db.run_batch(dbo.cursor(), f"""
        SET NOCOUNT ON;
        WITH n AS (
            SELECT TOP ({HISTORY}) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i
            FROM sys.all_objects AS a CROSS JOIN sys.all_objects AS b
        )
        INSERT INTO {table} (EnqueuedAt, [Type], {entity}[Status], AttemptNum, ScheduledFor, UpdatedAt)
        SELECT k.At, '{queue.types[0]}', {value}'Completed', 1, k.At, k.At
        FROM n CROSS APPLY (SELECT DATEADD(SECOND, n.i, CAST('{OLD}' AS DATETIME2(7))) AS At) AS k;
        INSERT INTO {table}Attempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Duration)
        SELECT q.EnqueuedAt, q.EnqueuedAt, 1, N'metrics/history', 'Completed', 10
        FROM {table} AS q WHERE q.EnqueuedAt < '2002-01-01';
    """)


@pytest.fixture
def history(dbo) -> Iterator[list[str]]:
    queues = load(REPO)
    try:
        for queue in queues:
            keep_history(dbo, queue)
        yield [q.name for q in queues]
    finally:
        for queue in queues:  # their attempts go with them (ON DELETE CASCADE)
            table = "dbo." + queue.name
            db.run_batch(dbo.cursor(), f"DELETE FROM {table} WHERE EnqueuedAt < '2002-01-01';")


def test_every_read_of_a_scrape_is_a_seek_of_each_queue_whatever_the_history(dbo, history) -> None:
    """The plans SQL Server runs for the counters' reads, with HISTORY finished items and
    attempts in every queue: every attempt table is read by a seek of
    IX_<Queue>Attempt_Started on StartedAt, every queue table by a seek of PK_<Queue> on
    EnqueuedAt, each reading the last minute's rows only, and nothing else is read."""
    enqueue(dbo, 2)
    worker = SqlProcedures(dbo, "SyncQueue")
    running = worker.claim("metrics-test/plans", 2, 0, type=JOB_TYPE)
    try:
        reading = counter_reading(dbo, None, 60_000, [])
        ask = [AttemptKey("SyncQueue", c.key, reading.since) for c in running]
        seen: set[str] = set()
        for text, values in [counter_batch(reading.since, 60_000), *followed_batches(ask)]:
            cursor = dbo.cursor()
            try:
                sets, columns = db.result_sets(
                    cursor, f"SET STATISTICS XML ON; {text} SET STATISTICS XML OFF;", *values)
            finally:
                cursor.close()
            for document in plans.showplans(sets, columns):
                for access in plans.accesses(document):
                    seen.add(access.table)
                    queue = access.table.removesuffix("Attempt")
                    assert queue in history, access
                    if access.table.endswith("Attempt"):
                        expected = ("Index Seek", f"IX_{access.table}_Started", "StartedAt")
                    else:
                        expected = ("Clustered Index Seek", f"PK_{access.table}", "EnqueuedAt")
                    seek = (access.seek_columns or ("",))[0]
                    assert (access.physical_op, access.index, seek) == expected, access
                    assert access.rows_read is not None and access.rows_read < HISTORY // 4, access
        assert {f"{q}Attempt" for q in history} | set(history) <= seen
    finally:
        for claim in running:
            worker.report(claim, "Completed")

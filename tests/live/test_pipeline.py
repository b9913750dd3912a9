"""The data pipeline against a real SQL Server: 100,000 work items (and some bad
rows) from a Parquet file through pipeline.enqueue, a re-run that enqueues
nothing twice, a worker draining them all, and pipeline.archive: every item is in
the archive exactly once, and none is left in the queue."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from relq import db
from relq.deploy.apply import deploy
from relq.pipeline import layout
from relq.pipeline.archive import archive
from relq.pipeline.enqueue import enqueue, read_input
from relq.pipeline.spark import session
from relq.pipeline.store import SqlStore
from relq.worker import Handlers, Settings, Worker
from relq.worker.cli import sql_connector
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

ITEMS = 100_000
PARTITIONS = 8
DRAIN_DEADLINE_S = 1800
SCHEMA = "Type STRING, EntityKey STRING, Payload STRING, Priority INT, GroupKey STRING"
BAD = [  # (row, why the validation refuses it)
    (("Unknown", "bad-1", None, None, None), "Type"),
    (("CustomerSync", " ", None, None, None), "EntityKey"),
    (("CustomerSync", "bad-3", "{not json", None, None), "Payload"),
    (("CustomerSync", "bad-4", None, 40_000, None), "Priority"),
    (("CustomerSync", "bad-5", None, None, "g" * 101), "GroupKey"),
]


@pytest.fixture(scope="module")
def spark():
    return session("local[4]", app="relq-live-pipeline", **{"spark.sql.shuffle.partitions": "8"})


def test_enqueue_drain_and_archive_100k_items_puts_each_in_the_archive_once(
    spark, mssql, new_database, tmp_path: Path
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    store = SqlStore(conn_str)
    rows = [("CustomerSync" if n % 4 else "InventorySync", f"item-{n}", f'{{"n": {n}}}', n % 7 - 3,
             f"g{n % 50}" if n % 10 == 0 else None) for n in range(ITEMS)]
    source = tmp_path / "items.parquet"
    spark.createDataFrame(rows + [row for row, _ in BAD], SCHEMA).repartition(4).write.parquet(str(source))
    frame = read_input(spark, str(source), "parquet")
    with store.session() as s:
        types = s.job_types("SyncQueue")

    first = enqueue(spark, store, "SyncQueue", frame, known_types=types, rejects=str(tmp_path / "rejects"),
                    partitions=PARTITIONS)
    again = enqueue(spark, store, "SyncQueue", frame, known_types=types, rejects=str(tmp_path / "rejects"),
                    partitions=PARTITIONS)

    assert (first.rows, first.rejected, first.enqueued, first.duplicates) == (
        ITEMS + len(BAD), len(BAD), ITEMS, 0)
    assert (again.enqueued, again.duplicates) == (0, ITEMS)
    rejected = {r["EntityKey"]: r["Reason"] for r in spark.read.parquet(str(tmp_path / "rejects")).collect()}
    assert sorted(rejected) == sorted(row[1] for row, _ in BAD)
    assert all(rejected[row[1]].startswith(field) for row, field in BAD)
    conn = db.connect(conn_str)
    conn.timeout = 300
    cursor = conn.cursor()
    try:
        assert db.query(cursor, "SELECT COUNT(*), COUNT(DISTINCT EntityKey) FROM dbo.SyncQueue;")[0] == (
            ITEMS, ITEMS)

        # Drain them with the worker runtime and a handler that only answers.
        handlers = Handlers()
        for job_type in ("CustomerSync", "InventorySync"):
            handlers.register("SyncQueue", job_type)(lambda item: f"done {item['EntityKey']}")
        worker = Worker(Settings("SyncQueue", "pipeline-live", concurrency=8, batch_size=100, wait_ms=1000,
                                 grace_s=10), handlers, sql_connector(conn_str, "SyncQueue"))
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + DRAIN_DEADLINE_S
        unfinished = "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Status] <> 'Completed';"
        while (left := db.query(cursor, unfinished)[0][0]) > 0:
            assert thread.is_alive(), "the worker stopped"
            assert time.monotonic() < deadline, f"{left} items not completed"
            time.sleep(1)
        worker.stop()
        thread.join(60)
        assert not thread.is_alive()

        # Finished two hours ago, as if the archive ran on its schedule.
        db.run_batch(cursor, "UPDATE dbo.SyncQueue SET UpdatedAt = DATEADD(HOUR, -2, UpdatedAt);")
        root = tmp_path / "archive"
        result = archive(spark, store, "SyncQueue", str(root), older_than_minutes=60, partitions=PARTITIONS)

        assert (result.read, result.written, result.already, result.purged, result.kept) == (
            ITEMS, ITEMS, 0, ITEMS, 0)
        left = db.query(cursor, "SELECT (SELECT COUNT(*) FROM dbo.SyncQueue), "
                                "(SELECT COUNT(*) FROM dbo.SyncQueueAttempt);")[0]
        assert left == (0, 0)
    finally:
        conn.close()

    archived = layout.read(spark, str(root)).where("Queue = 'SyncQueue'")
    counts = Counter(r["EntityKey"] for r in archived.select("EntityKey").collect())
    assert set(counts) == {f"item-{n}" for n in range(ITEMS)}
    assert set(counts.values()) == {1}
    assert archived.select("EnqueuedAt").distinct().count() == ITEMS
    sample = archived.where("EntityKey = 'item-10'").collect()[0]
    assert (sample["Type"], sample["Status"], sample["Response"], sample["AttemptNum"], sample["Priority"],
            sample["GroupKey"], sample["Payload"]) == (
        "CustomerSync", "Completed", "done item-10", 1, 0, "g10", '{"n": 10}')

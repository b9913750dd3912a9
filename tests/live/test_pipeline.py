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
from relq.errors import RelqError
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
        # The database's spelling, whatever the caller's (the default collation is case-insensitive).
        assert s.queue_name("SYNCQUEUE") == "SyncQueue"

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


NOTIFICATIONS = 5_000  # more than one call of 4,000
NOTIFICATION_SCHEMA = ("UserID STRING, Username STRING, OTP STRING, EmailTo STRING, "
                       "PreferredLanguage STRING, PhoneNumber STRING")


def test_notifications_are_enqueued_set_based_then_archived_by_one_run_at_a_time(
    spark, mssql, new_database, tmp_path: Path
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    store = SqlStore(conn_str)
    # Every third has SMS only, every even one both channels, the rest e-mail only.
    rows = [(str(n), f"user{n}", f"C{n:05d}", None if n % 3 == 0 else f"user{n}@example.com",
             "en-GB" if n % 5 == 0 else None, f"+1415555{n:04d}" if n % 3 == 0 or n % 2 == 0 else None)
            for n in range(1, NOTIFICATIONS + 1)]
    bad = [("9001", "eve", "E9001", "eve@@example.com", None, None),  # refused by the validation
           ("9002", "fay", "F9002", None, None, None)]  # no channel
    frame = spark.createDataFrame(rows + bad, NOTIFICATION_SCHEMA)

    first = enqueue(spark, store, "Notification", frame, rejects=str(tmp_path / "rejects"), partitions=4)
    again = enqueue(spark, store, "Notification", frame, rejects=str(tmp_path / "rejects"), partitions=4)

    assert (first.rows, first.rejected, first.enqueued, first.duplicates) == (
        NOTIFICATIONS + 2, 2, NOTIFICATIONS, 0)
    assert (again.enqueued, again.duplicates) == (0, NOTIFICATIONS)
    emails = sum(1 for r in rows if r[3] is not None)
    texts = sum(1 for r in rows if r[5] is not None)
    conn = db.connect(conn_str)
    conn.timeout = 300
    cursor = conn.cursor()
    try:
        counts = db.query(cursor, "SELECT (SELECT COUNT(*) FROM dbo.Notification), "
                                  "(SELECT COUNT(*) FROM dbo.Notification_ResetPassword), "
                                  "(SELECT COUNT(*) FROM dbo.Notification_Email), "
                                  "(SELECT COUNT(*) FROM dbo.Notification_Sms), "
                                  "(SELECT COUNT(*) FROM dbo.Notification_Email "
                                  "WHERE PreferredLanguage = 'en-GB');")
        assert counts[0] == (NOTIFICATIONS, NOTIFICATIONS, emails, texts,
                             sum(1 for r in rows if r[3] is not None and r[4] == "en-GB"))
        db.run_batch(cursor, "UPDATE dbo.Notification SET [Status] = 'Completed', "
                             "UpdatedAt = DATEADD(HOUR, -2, SYSUTCDATETIME());")
        root = tmp_path / "archive"
        with store.session() as other:  # another archive run of the queue holds its lock
            assert other.try_lock("relq.pipeline.archive:Notification")
            assert other.holds_lock("relq.pipeline.archive:Notification")
            with pytest.raises(RelqError, match=r"another pipeline\.archive of Notification is running"):
                archive(spark, store, "Notification", str(root), older_than_minutes=60, partitions=4)
            other.unlock("relq.pipeline.archive:Notification")  # a pooled connection would keep it
            assert not other.holds_lock("relq.pipeline.archive:Notification")
        result = archive(spark, store, "Notification", str(root), older_than_minutes=60, partitions=4,
                         range_rows=1_000)
        assert (result.read, result.written, result.purged, result.kept) == (
            NOTIFICATIONS, NOTIFICATIONS, NOTIFICATIONS, 0)
        assert db.query(cursor, "SELECT COUNT(*) FROM dbo.Notification;")[0][0] == 0
    finally:
        conn.close()

    archived = layout.read(spark, str(root)).where("Queue = 'Notification'")
    assert archived.count() == NOTIFICATIONS
    sample = archived.where("UserID = 6").collect()[0]
    assert (sample["Type"], sample["OTP"], sample["EmailTo"], sample["PhoneNumber"]) == (
        "ResetPassword", "C00006", None, "+14155550006")

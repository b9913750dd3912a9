"""pipeline.archive against a stand-in database (fake_store): key ranges, one
read per range, the archive layout, the count check, and re-runs after a failure
between writing and purging (every row once in the archive, none left behind)."""

from __future__ import annotations

import io
import itertools
import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.archive import LOCK_PREFIX, archive, ranges
from relq.pipeline.enqueue import enqueue
from relq.pipeline.queues import spec
from tests.conftest import REPO
from tests.pipeline.fake_store import FakeStore, iso, now

SCHEMA = "Type STRING, EntityKey STRING"
T0 = datetime(2026, 3, 1, 8, 0)


def test_ranges_run_from_each_start_to_the_next_and_the_last_one_to_the_last_key() -> None:
    starts = [T0, T0 + timedelta(seconds=1), T0 + timedelta(days=3)]
    last = T0 + timedelta(days=3, microseconds=5)

    got = ranges(starts, last)

    end = last + timedelta(microseconds=1)
    assert got == [(starts[0], starts[1]), (starts[1], starts[2]), (starts[2], end)]
    assert ranges([T0], T0) == [(T0, T0 + timedelta(microseconds=1))]
    assert ranges([], T0) == []
    with pytest.raises(ValueError):
        ranges([T0, T0], T0)
    with pytest.raises(ValueError):
        ranges([T0], T0 - timedelta(microseconds=1))


def filled(spark, tmp_path: Path, count: int, **options) -> FakeStore:
    store = FakeStore(str(tmp_path / "queue.sqlite"), **options).create()
    rows = [("CustomerSync" if n % 3 else "InventorySync", f"E-{n}") for n in range(count)]
    enqueue(spark, store, "SyncQueue", spark.createDataFrame(rows, SCHEMA),
            known_types=("CustomerSync", "InventorySync"), rejects=str(tmp_path / "rejects"), partitions=2)
    return store


def archived(spark, root: Path) -> list:
    return layout.read(spark, str(root)).collect()


def test_archive_moves_only_the_old_finished_items_into_the_layout(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 30)
    store.finish("Completed", where="CAST(substr(EntityKey, 3) AS INTEGER) < 20")
    store.finish("Failed", ago=timedelta(minutes=5), where="CAST(substr(EntityKey, 3) AS INTEGER) >= 25")
    root = tmp_path / "archive"

    result = archive(spark, store, "SyncQueue", str(root), older_than_minutes=60, partitions=3)

    assert (result.read, result.written, result.already, result.purged, result.kept) == (20, 20, 0, 20, 0)
    rows = archived(spark, root)
    assert sorted(r["EntityKey"] for r in rows) == sorted(f"E-{n}" for n in range(20))
    left = {r["EntityKey"]: r["Status"] for r in store.rows()}
    assert len(left) == 10 and set(left.values()) == {"Pending", "Failed"}  # unfinished, or too recent
    day = (now() - timedelta(hours=2)).date()
    assert {(r["Queue"], r["Type"], r["Day"]) for r in rows} == {("SyncQueue", "CustomerSync", day),
                                                                ("SyncQueue", "InventorySync", day)}
    first = next(r for r in rows if r["EntityKey"] == "E-1")
    assert (first["Status"], first["Step"], first["AttemptNum"], first["Duration"], first["Response"],
            first["LockedBy"]) == ("Completed", "Push", 1, 42, "done", "w/1")
    assert first["DedupKey"].startswith("relq:sha256:") and first["ArchivedAt"] is not None
    assert (root / "Queue=SyncQueue" / "Type=CustomerSync" / f"Day={day.isoformat()}").is_dir()


def test_each_key_range_is_read_once_in_its_own_partition(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 40)
    store.finish()

    result = archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60,
                     partitions=2, range_rows=10)

    reads = store.calls("read")
    assert len(reads) == 4  # 40 items, at most 10 a range: 4 ranges although 2 partitions were asked for
    assert all(a[2] == b[1] for a, b in itertools.pairwise(reads))  # contiguous: no key read twice or missed
    assert [size for size, _, _ in reads] == [10, 10, 10, 10]
    assert result.read == 40 and result.purged == 40 and store.rows() == []


def test_a_failure_between_writing_and_purging_loses_nothing_and_the_rerun_archives_nothing_twice(
        spark, tmp_path) -> None:
    broken = filled(spark, tmp_path, 25, fail_purge=True)
    broken.finish()
    root = tmp_path / "archive"

    with pytest.raises(Exception, match="the connection was lost"):
        archive(spark, broken, "SyncQueue", str(root), older_than_minutes=60, partitions=2)
    assert len(broken.rows()) == 25 and len(archived(spark, root)) == 25  # in both: never neither

    fixed = FakeStore(broken.path)
    result = archive(spark, fixed, "SyncQueue", str(root), older_than_minutes=60, partitions=2)

    assert (result.read, result.written, result.already, result.purged) == (25, 0, 25, 25)
    counts = Counter(r["EntityKey"] for r in archived(spark, root))
    assert sorted(counts) == sorted(f"E-{n}" for n in range(25)) and set(counts.values()) == {1}
    assert broken.rows() == []


def test_an_item_retried_after_it_was_read_stays_in_the_queue_and_is_counted_as_kept(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 10, retry_before_purge="E-4")
    store.finish()

    root = str(tmp_path / "archive")
    result = archive(spark, store, "SyncQueue", root, older_than_minutes=60, partitions=2)

    assert (result.read, result.purged, result.kept) == (10, 9, 1)
    (left,) = store.rows()
    assert (left["EntityKey"], left["Status"]) == ("E-4", "Pending")
    assert len(archived(spark, tmp_path / "archive")) == 10  # and in the archive as it was read


def test_nothing_old_enough_archives_nothing_and_bad_arguments_are_one_line(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 5)
    store.finish(ago=timedelta(minutes=1))

    result = archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60)

    assert result.read == 0 and len(store.rows()) == 5 and not (tmp_path / "archive").exists()
    with pytest.raises(RelqError, match="unknown queue"):
        archive(spark, store, "no-such", str(tmp_path / "archive"), older_than_minutes=60)
    with pytest.raises(RelqError, match="queue Nope: this database has no such queue"):
        archive(spark, store, "Nope", str(tmp_path / "archive"), older_than_minutes=60)
    with pytest.raises(RelqError, match="older-than-minutes"):
        archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=0)


def test_the_count_check_refuses_to_purge_when_the_archive_lacks_rows(spark, tmp_path, monkeypatch) -> None:
    store = filled(spark, tmp_path, 6)
    store.finish()
    write = layout.write  # a writer that loses two rows, as a broken file system might
    monkeypatch.setattr(layout, "write", lambda frame, root: write(frame.orderBy("EnqueuedAt").limit(4),
                                                                   root))

    with pytest.raises(RelqError, match="the archive holds 4 of the 6 rows read in key range 0"):
        archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60, partitions=1)
    assert len(store.rows()) == 6  # nothing purged


def test_ranges_hold_equal_row_counts_when_the_keys_are_skewed(spark, tmp_path) -> None:
    # One item enqueued a day before 40 others: ranges of equal time would put the 40
    # into one task; ranges of equal row counts spread them.
    store = filled(spark, tmp_path, 41)
    first = store.rows()[0]["EnqueuedAt"]
    with store.connect() as conn:
        conn.execute("UPDATE SyncQueue SET EnqueuedAt = ? WHERE EnqueuedAt = ?",
                     (iso(first - timedelta(days=1)), iso(first)))
    store.finish()

    result = archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60,
                     partitions=2, range_rows=10)

    sizes = [size for size, _, _ in store.calls("read")]
    assert sizes == [9, 9, 9, 9, 5]  # 41 rows in 5 ranges (at most 10 a range) of 9
    assert (result.read, result.purged, result.kept) == (41, 41, 0)


def test_a_spark_session_not_in_utc_is_refused_before_anything_is_read(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 5)
    store.finish()
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        with pytest.raises(RelqError, match=r"needs a Spark session in UTC .*Asia/Kolkata"):
            archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert len(store.rows()) == 5 and store.calls("read") == [] and not (tmp_path / "archive").exists()


def test_a_second_run_while_one_holds_the_lock_is_one_line_and_does_nothing(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 5)
    store.finish()
    root = str(tmp_path / "archive")

    with store.session() as other:
        assert other.try_lock(LOCK_PREFIX + "SyncQueue")
        with pytest.raises(RelqError, match=r"another pipeline\.archive of SyncQueue is running"):
            archive(spark, store, "SyncQueue", root, older_than_minutes=60)
        assert len(store.rows()) == 5 and store.calls("read") == []
        other.unlock(LOCK_PREFIX + "SyncQueue")
    assert len(store.calls("unlock")) == 1  # the refused run released nothing it did not hold

    result = archive(spark, store, "SyncQueue", root, older_than_minutes=60)
    assert result.purged == 5 and len(store.calls("unlock")) == 2
    with store.session() as later:  # this run let go of its own (the fake keeps locks past a session's end)
        assert later.try_lock(LOCK_PREFIX + "SyncQueue")


def test_the_cutoff_is_taken_on_the_database_clock(spark, tmp_path) -> None:
    # The database's clock is 3 hours ahead of this machine's; the items finished 2 hours
    # ago by the database's clock: older than an hour.
    store = filled(spark, tmp_path, 5, skew=timedelta(hours=3))
    store.finish(ago=timedelta(hours=2))

    result = archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60)

    assert (result.read, result.purged) == (5, 5)
    assert abs(result.cutoff - (now() + timedelta(hours=2))) < timedelta(minutes=5)


def test_items_gone_before_the_purge_count_as_purged_not_kept(spark, tmp_path) -> None:
    # As when Spark runs a purge task again after its first attempt purged some items:
    # the second attempt removes none of those, and yet they are gone.
    store = filled(spark, tmp_path, 10, purged_before_purge="E-3")
    store.finish()

    result = archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60,
                     partitions=2)

    assert (result.read, result.purged, result.kept) == (10, 10, 0)
    assert store.rows() == []


def test_the_callers_partition_type_inference_setting_is_left_alone(spark, tmp_path) -> None:
    key = "spark.sql.sources.partitionColumnTypeInference.enabled"
    store = FakeStore(str(tmp_path / "queue.sqlite"), types=("2024", "CustomerSync")).create()
    frame = spark.createDataFrame([("2024", "E-1"), ("CustomerSync", "E-2")], SCHEMA)
    enqueue(spark, store, "SyncQueue", frame, known_types=store.types, rejects=str(tmp_path / "rejects"),
            partitions=1)
    store.finish()
    root = tmp_path / "archive"
    spark.conf.set(key, "true")
    try:
        result = archive(spark, store, "SyncQueue", str(root), older_than_minutes=60)
        assert spark.conf.get(key) == "true"
        rows = archived(spark, root)
        assert spark.conf.get(key) == "true"
    finally:
        spark.conf.unset(key)
    assert (result.read, result.purged) == (2, 2)
    assert sorted(r["Type"] for r in rows) == ["2024", "CustomerSync"]  # a string, not the number 2024


def test_the_fake_purge_takes_keys_only_as_the_pipeline_formats_them(tmp_path) -> None:
    store = FakeStore(str(tmp_path / "queue.sqlite")).create()
    with store.session() as session:
        assert session.purge("SyncQueue", [("2026-03-01T08:00:00.000001", "2026-03-01T09:00:00.000000")]) == 0
        for bad in ("2026-03-01 08:00:00.000001", "2026-03-01T08:00:00", "2026-03-01T08:00:00.000001+00:00"):
            with pytest.raises(AssertionError, match="ISO 8601 with microseconds"):
                session.purge("SyncQueue", [(bad, "2026-03-01T09:00:00.000000")])


def test_a_queue_name_in_another_case_is_locked_archived_and_skipped_under_the_databases_spelling(
        spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 6)
    store.finish()
    root = tmp_path / "archive"

    with store.session() as other:  # a run of SyncQueue holds the lock: SYNCQUEUE is the same queue
        assert other.try_lock(LOCK_PREFIX + "SyncQueue")
        with pytest.raises(RelqError, match=r"another pipeline\.archive of SyncQueue is running"):
            archive(spark, store, "SYNCQUEUE", str(root), older_than_minutes=60)
        other.unlock(LOCK_PREFIX + "SyncQueue")
    result = archive(spark, store, "SYNCQUEUE", str(root), older_than_minutes=60, partitions=2)

    assert (result.read, result.purged) == (6, 6)
    assert {r["Queue"] for r in archived(spark, root)} == {"SyncQueue"}
    assert not (root / "Queue=SYNCQUEUE").exists()
    rows = [("CustomerSync" if n % 3 else "InventorySync", f"E-{n}") for n in range(6)]
    again = enqueue(spark, store, "SYNCQUEUE", spark.createDataFrame(rows, SCHEMA),
                    known_types=("CustomerSync", "InventorySync"), rejects=str(tmp_path / "r2"),
                    archive=str(root))
    assert (again.skipped, again.enqueued) == (6, 0) and store.rows() == []


def test_a_lock_lost_during_the_run_stops_it_before_the_purge(spark, tmp_path, monkeypatch) -> None:
    # The driver's connection dropped (an idle timeout, a kill) while the rows were written:
    # its session's lock went with it, and another run may be archiving the same rows.
    store = filled(spark, tmp_path, 6)
    store.finish()
    write = layout.write

    def write_and_lose_the_lock(frame, root):
        write(frame, root)
        store.drop_locks()

    monkeypatch.setattr(layout, "write", write_and_lose_the_lock)
    root = tmp_path / "archive"

    with pytest.raises(RelqError, match=r"the application lock relq\.pipeline\.archive:SyncQueue was lost"):
        archive(spark, store, "SyncQueue", str(root), older_than_minutes=60)

    assert len(store.rows()) == 6 and store.calls("purge") == []
    assert len(archived(spark, root)) == 6  # in both: a re-run purges them


def test_a_failed_unlock_is_reported_and_never_replaces_the_result_or_the_error(spark, tmp_path) -> None:
    store = filled(spark, tmp_path, 4, fail_unlock=True)
    store.finish()
    out = io.StringIO()

    result = archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60,
                     console=Console(file=out, width=400))

    assert result.purged == 4 and len(store.calls("unlock")) == 1
    assert ("could not release the application lock relq.pipeline.archive:SyncQueue "
            "(ConnectionError: the connection was lost while unlocking)") in out.getvalue()

    (tmp_path / "second").mkdir()
    broken = filled(spark, tmp_path / "second", 4, fail_unlock=True, fail_purge=True)
    broken.finish()
    with pytest.raises(Exception, match="the connection was lost") as caught:
        archive(spark, broken, "SyncQueue", str(tmp_path / "archive2"), older_than_minutes=60,
                console=Console(file=io.StringIO()))
    assert "while unlocking" not in str(caught.value) and len(broken.calls("unlock")) == 1


def test_a_queue_with_subtype_columns_is_refused_before_anything_is_locked_read_or_purged(
        spark, tmp_path) -> None:
    """The archive layout has no place for a subtype's columns: purging what it read would lose them."""
    store = filled(spark, tmp_path, 3, subtype_columns=("Iban", "Mandate"))
    store.finish()

    with pytest.raises(RelqError, match=r"columns the pipeline's archive does not carry \(Iban, Mandate"):
        archive(spark, store, "SyncQueue", str(tmp_path / "archive"), older_than_minutes=60)

    assert len(store.rows()) == 3 and not (tmp_path / "archive").exists()
    assert store.calls("read") == [] and store.calls("purge") == []
    with store.session() as session:
        assert session.try_lock(LOCK_PREFIX + "SyncQueue")  # never taken, so free


def test_the_archive_reads_every_column_of_the_real_worker_views() -> None:
    """What the guard above compares with: each shipped queue's view has no column the archive drops."""
    for queue in ("SyncQueue", "Notification"):
        text = (REPO / f"database/views/dbo.Worker_{queue}_V.sql").read_text()
        selected = text.split("SELECT", 1)[1].split("FROM", 1)[0]
        columns = {re.split(r"[. ]", c.strip())[-1].strip("[]") for c in selected.split(",")}
        assert columns == set(spec(queue).read_columns()), queue

"""pipeline.archive against a stand-in database (fake_store): key ranges, one
read per range, the archive layout, the count check, and re-runs after a failure
between writing and purging (every row once in the archive, none left behind)."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.archive import archive, split
from relq.pipeline.enqueue import enqueue
from tests.pipeline.fake_store import FakeStore, now

SCHEMA = "Type STRING, EntityKey STRING"
T0 = datetime(2026, 3, 1, 8, 0)


@pytest.mark.parametrize("parts", [1, 2, 3, 7, 64])
def test_split_covers_the_span_with_contiguous_non_empty_ranges(parts: int) -> None:
    first, last = T0, T0 + timedelta(seconds=5, microseconds=3)
    ranges = split(first, last, parts)
    assert len(ranges) == parts
    assert ranges[0][0] == first and ranges[-1][1] == last + timedelta(microseconds=1)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert all(start < end for start, end in ranges)
    sizes = [(end - start) // timedelta(microseconds=1) for start, end in ranges]
    assert max(sizes) - min(sizes) <= 1  # even


def test_split_gives_fewer_ranges_than_asked_when_the_span_is_shorter() -> None:
    assert split(T0, T0, 4) == [(T0, T0 + timedelta(microseconds=1))]
    assert len(split(T0, T0 + timedelta(microseconds=2), 10)) == 3
    with pytest.raises(ValueError):
        split(T0, T0 - timedelta(microseconds=1), 2)


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

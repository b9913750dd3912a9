"""pipeline.enqueue against a stand-in database (fake_store): the validation and
its rejects, the derived DedupKey and re-runs, the database's own refusals, and
calls of at most the procedure's size from every partition."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from relq.errors import RelqError
from relq.pipeline import layout
from relq.pipeline.enqueue import DERIVED_PREFIX, enqueue, read_input
from tests.pipeline.fake_store import FakeStore

TYPES = ("CustomerSync", "InventorySync")
SCHEMA = ("Type STRING, EntityKey STRING, Payload STRING, ScheduledFor STRING, Priority STRING, "
          "GroupKey STRING, DedupKey STRING")
GOOD = ("CustomerSync", "C-1", '{"full": true}', "2030-01-01T10:00:00+02:00", "5", "g1", None)
# (row, the reason it must be rejected with)
BAD = [
    ((None, "C-2", None, None, None, None, None), "Type is required"),
    (("   ", "C-3", None, None, None, None, None), "Type is required"),
    (("Unknown", "C-4", None, None, None, None, None), "Type is not a job type of this queue"),
    (("CustomerSync", None, None, None, None, None, None), "EntityKey is required"),
    (("CustomerSync", "  ", None, None, None, None, None), "EntityKey is required"),
    (("CustomerSync", "x" * 201, None, None, None, None, None), "EntityKey is longer than 200 characters"),
    # 200 characters, but 201 UTF-16 units: NVARCHAR(200) holds 200 units
    (("CustomerSync", "x" * 199 + "\U0001F600", None, None, None, None, None),
     "EntityKey is longer than 200 characters"),
    (("CustomerSync", "C-5", "{not json", None, None, None, None), "Payload is not a JSON object or array"),
    (("CustomerSync", "C-6", "42", None, None, None, None), "Payload is not a JSON object or array"),
    (("CustomerSync", "C-7", None, "next tuesday", None, None, None),
     "ScheduledFor is not a timestamp (ISO 8601; UTC unless it says)"),
    (("CustomerSync", "C-8", None, None, "high", None, None), "Priority is not an integer"),
    (("CustomerSync", "C-9", None, None, "1.5", None, None), "Priority is not an integer"),
    (("CustomerSync", "C-10", None, None, "40000", None, None), "Priority must be -32768 to 32767"),
    (("CustomerSync", "C-15", None, None, "99999999999", None, None), "Priority must be -32768 to 32767"),
    (("CustomerSync", "C-11", None, None, None, " ", None),
     "GroupKey must not be blank: leave it empty for none"),
    (("CustomerSync", "C-12", None, None, None, "g" * 101, None), "GroupKey is longer than 100 characters"),
    (("CustomerSync", "C-13", None, None, None, None, ""),
     "DedupKey must not be blank: leave it empty for none"),
    (("CustomerSync", "C-14", None, None, None, None, "d" * 201), "DedupKey is longer than 200 characters"),
]


@pytest.fixture
def store(tmp_path: Path) -> FakeStore:
    return FakeStore(str(tmp_path / "queue.sqlite")).create()


def items(spark, count: int):
    return spark.createDataFrame([("CustomerSync", f"C-{n}", None, None, None, None, None)
                                  for n in range(count)], SCHEMA)


def run(spark, store: FakeStore, frame, tmp_path: Path, **options):
    options = {"known_types": TYPES, "rejects": str(tmp_path / "rejects"), "partitions": 3} | options
    return enqueue(spark, store, "SyncQueue", frame, **options)


def test_each_bad_row_is_rejected_with_its_reason_and_the_good_ones_are_enqueued(
        spark, store, tmp_path) -> None:
    frame = spark.createDataFrame([GOOD, *(row for row, _ in BAD),
                                   ("InventorySync", "I-1", "[1, 2]", None, "-32768", None, "mine")], SCHEMA)

    result = run(spark, store, frame, tmp_path)

    assert (result.rows, result.rejected, result.enqueued, result.duplicates) == (
        len(BAD) + 2, len(BAD), 2, 0)
    rejects = spark.read.parquet(str(tmp_path / "rejects"))
    assert rejects.columns == ["Type", "EntityKey", "Payload", "ScheduledFor", "Priority", "GroupKey",
                               "DedupKey", "Reason"]
    got = sorted(((tuple(r[:7]), r["Reason"]) for r in rejects.collect()), key=repr)
    assert got == sorted(BAD, key=repr)
    rows = {r["EntityKey"]: r for r in store.rows()}
    assert set(rows) == {"C-1", "I-1"}
    first = rows["C-1"]
    assert first["ScheduledFor"] == datetime(2030, 1, 1, 8, 0)  # +02:00 taken to UTC
    assert (first["Type"], first["Payload"], first["Priority"], first["GroupKey"]) == (
        "CustomerSync", '{"full": true}', 5, "g1")
    assert first["DedupKey"].startswith(DERIVED_PREFIX) and len(first["DedupKey"]) == len(DERIVED_PREFIX) + 64
    assert (rows["I-1"]["Priority"], rows["I-1"]["DedupKey"]) == (-32768, "mine")


def test_a_rerun_enqueues_nothing_twice_and_identical_rows_are_one_item(spark, store, tmp_path) -> None:
    rows = [("CustomerSync", f"C-{n}", None, None, None, None, None) for n in range(40)]
    frame = spark.createDataFrame([*rows, rows[0], rows[1]], SCHEMA)

    first = run(spark, store, frame, tmp_path)
    second = run(spark, store, frame, tmp_path)

    assert (first.enqueued, first.duplicates) == (40, 2)
    assert (second.enqueued, second.duplicates) == (0, 42)
    assert len(store.rows()) == 40


def test_a_rerun_after_the_items_finished_skips_the_archived_ones_and_only_those(
        spark, store, tmp_path) -> None:
    frame = items(spark, 6)
    run(spark, store, frame, tmp_path)
    store.finish()
    archived = [r for r in store.rows() if r["EntityKey"] in ("C-0", "C-1", "C-2")]
    archive = str(tmp_path / "archive")
    layout.write(spark.createDataFrame(
        [("SyncQueue", r["Type"], r["EnqueuedAt"], r["UpdatedAt"], r["DedupKey"]) for r in archived],
        "Queue STRING, Type STRING, EnqueuedAt TIMESTAMP, UpdatedAt TIMESTAMP, DedupKey STRING"), archive)

    again = run(spark, store, frame, tmp_path, archive=archive)

    # C-0..C-2 are in the archive; C-3..C-5 finished but were not archived: the
    # DedupKey rule no longer holds them, so they come again (the documented limit).
    assert (again.skipped, again.enqueued, again.duplicates) == (3, 3, 0)
    pending = sorted(r["EntityKey"] for r in store.rows() if r["Status"] == "Pending")
    assert pending == ["C-3", "C-4", "C-5"]


def test_a_row_the_database_refuses_lands_in_the_rejects_and_the_rest_of_its_call_goes_in(
        spark, tmp_path) -> None:
    store = FakeStore(str(tmp_path / "queue.sqlite"), types=("CustomerSync",)).create()
    frame = spark.createDataFrame([("CustomerSync", "C-1", None, None, None, None, None),
                                   ("InventorySync", "I-1", None, None, "3", None, None),
                                   ("CustomerSync", "C-2", None, None, None, None, None)], SCHEMA)

    result = run(spark, store, frame, tmp_path, partitions=1)

    assert (result.rejected, result.enqueued) == (1, 2)
    (reject,) = spark.read.parquet(str(tmp_path / "rejects")).collect()
    assert (reject["EntityKey"], reject["Priority"]) == ("I-1", "3")
    assert reject["Reason"] == "refused by the database: Type is not one of dbo.SyncQueueType"
    assert sorted(r["EntityKey"] for r in store.rows()) == ["C-1", "C-2"]


def test_every_partition_sends_calls_of_at_most_the_limit(spark, store, tmp_path) -> None:
    frame = items(spark, 25)

    result = run(spark, store, frame, tmp_path, partitions=2, limit=4)

    sizes = [size for size, _, _ in store.calls("enqueue")]
    assert result.enqueued == 25 and sum(sizes) == 25
    assert max(sizes) == 4 and len(sizes) >= 7


def test_csv_and_json_inputs_are_read_and_a_missing_required_column_is_one_line(
        spark, store, tmp_path) -> None:
    csv = tmp_path / "items.csv"
    csv.write_text('Type,EntityKey,Payload,Priority\nCustomerSync,C-1,"{""a"": 1}",7\nCustomerSync,C-2,,\n',
                   encoding="utf-8")
    jsonl = tmp_path / "items.json"
    item = {"Type": "InventorySync", "EntityKey": "I-1", "Priority": 2,
            "ScheduledFor": "2030-01-01T00:00:00Z"}
    jsonl.write_text(json.dumps(item) + "\n", encoding="utf-8")

    run(spark, store, read_input(spark, str(csv), "csv"), tmp_path)
    run(spark, store, read_input(spark, str(jsonl), "json"), tmp_path)

    rows = {r["EntityKey"]: r for r in store.rows()}
    assert (rows["C-1"]["Payload"], rows["C-1"]["Priority"], rows["C-2"]["Payload"]) == ('{"a": 1}', 7, None)
    assert (rows["I-1"]["Priority"], rows["I-1"]["ScheduledFor"]) == (2, datetime(2030, 1, 1))
    (tmp_path / "no_key.csv").write_text("Type\nCustomerSync\n", encoding="utf-8")
    with pytest.raises(RelqError, match="no column EntityKey"):
        read_input(spark, str(tmp_path / "no_key.csv"), "csv")
    with pytest.raises(RelqError, match="cannot read it as parquet"):
        read_input(spark, str(tmp_path / "missing"), "parquet")


def test_a_spark_session_not_in_utc_is_refused_before_anything_is_enqueued(spark, store, tmp_path) -> None:
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        with pytest.raises(RelqError, match=r"needs a Spark session in UTC .*Asia/Kolkata"):
            run(spark, store, items(spark, 3), tmp_path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert store.rows() == [] and store.calls("enqueue") == []


def test_any_job_queue_is_enqueued_by_its_name_and_an_unknown_one_is_one_line(spark, tmp_path) -> None:
    store = FakeStore(str(tmp_path / "queue.sqlite"), queues=("InvoiceExport",)).create()

    result = enqueue(spark, store, "InvoiceExport", items(spark, 5), known_types=TYPES,
                     rejects=str(tmp_path / "rejects"), partitions=2)

    assert result.enqueued == 5 and len(store.rows("InvoiceExport")) == 5
    with pytest.raises(Exception, match="queue SyncQueue: this database has no such queue"):
        enqueue(spark, store, "SyncQueue", items(spark, 1), known_types=TYPES, rejects=str(tmp_path / "r2"))
    with pytest.raises(RelqError, match="unknown queue 'sync_queue'"):
        enqueue(spark, store, "sync_queue", items(spark, 1), known_types=TYPES, rejects=str(tmp_path / "r3"))


def test_a_fractional_priority_column_holding_whole_numbers_is_taken(spark, store, tmp_path) -> None:
    # pandas writes float64 for an integer column with nulls; Spark 4's try_cast('5.0' AS BIGINT) is NULL.
    frame = spark.createDataFrame([("CustomerSync", "C-1", 5.0), ("CustomerSync", "C-2", None),
                                   ("CustomerSync", "C-3", -32768.0), ("CustomerSync", "C-4", 1.5),
                                   ("CustomerSync", "C-5", float("nan")), ("CustomerSync", "C-6", 40000.0),
                                   ("CustomerSync", "C-7", 1e300)],
                                  "Type STRING, EntityKey STRING, Priority DOUBLE")

    result = run(spark, store, frame, tmp_path)

    assert (result.enqueued, result.rejected) == (3, 4)
    assert {r["EntityKey"]: r["Priority"] for r in store.rows()} == {"C-1": 5, "C-2": 0, "C-3": -32768}
    reasons = {r["EntityKey"]: r["Reason"] for r in spark.read.parquet(str(tmp_path / "rejects")).collect()}
    assert reasons == {"C-4": "Priority is not an integer", "C-5": "Priority is not an integer",
                       "C-6": "Priority must be -32768 to 32767", "C-7": "Priority must be -32768 to 32767"}


def test_dedup_keys_are_compared_as_the_database_compares_them(spark, store, tmp_path) -> None:
    # The database's collation ignores case and trailing spaces: so do the archive check and the fake.
    archive = str(tmp_path / "archive")
    layout.write(spark.createDataFrame(
        [("SyncQueue", "CustomerSync", datetime(2026, 3, 1), datetime(2026, 3, 1), "Done-1")],
        "Queue STRING, Type STRING, EnqueuedAt TIMESTAMP, UpdatedAt TIMESTAMP, DedupKey STRING"), archive)
    frame = spark.createDataFrame([("CustomerSync", "C-1", None, None, None, None, "DONE-1  "),
                                   ("CustomerSync", "C-2", None, None, None, None, "open-2")], SCHEMA)
    first = run(spark, store, frame, tmp_path, archive=archive)
    again = run(spark, store, spark.createDataFrame(
        [("CustomerSync", "C-3", None, None, None, None, "OPEN-2 ")], SCHEMA), tmp_path)

    assert (first.skipped, first.enqueued) == (1, 1)
    assert (again.enqueued, again.duplicates) == (0, 1)
    assert [r["EntityKey"] for r in store.rows()] == ["C-2"]

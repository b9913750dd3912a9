"""relq.pipeline.history: seeded, in the archive layout, and shaped like finished queue items."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from relq.pipeline import history, layout


def _rows(spark, rows: int, seed: int, **kw) -> list[tuple]:
    return [tuple(r) for r in history.generate(spark, rows, seed, **kw).orderBy("EnqueuedAt").collect()]


def test_the_same_seed_gives_the_same_rows_whatever_the_partitions(spark) -> None:
    one = _rows(spark, 3000, 5, partitions=1)
    assert one == _rows(spark, 3000, 5, partitions=5)
    assert one != _rows(spark, 3000, 6, partitions=1)


def test_rows_carry_the_layout_columns_then_queue_and_type(spark) -> None:
    frame = history.generate(spark, 10)
    expected = [(name, kind.lower()) for name, kind in layout.COMMON]
    expected += [("Queue", "string"), ("Type", "string")]
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == expected


def test_rows_look_like_finished_items(spark) -> None:
    rows = history.generate(spark, 20_000, 9, days=3).toLocalIterator()
    # PySpark hands timestamps back in the Python process's local time
    start = datetime.fromtimestamp((history.END - timedelta(days=3)).timestamp())
    end = datetime.fromtimestamp(history.END.timestamp())
    seen_types: dict[tuple[str, str], int] = {}
    previous = None
    for r in rows:
        seen_types[(r.Queue, r.Type)] = seen_types.get((r.Queue, r.Type), 0) + 1
        assert r.Status in history.FINISHED
        assert start <= r.EnqueuedAt < end
        assert previous is None or r.EnqueuedAt > previous  # unique, increasing keys
        previous = r.EnqueuedAt
        assert r.ScheduledFor >= r.EnqueuedAt
        assert r.UpdatedAt >= r.EnqueuedAt
        if r.AttemptNum == 0:
            assert r.Status == "Cancelled" and r.StartedAt is None and r.Duration is None
            continue
        assert 1 <= r.AttemptNum <= 3 and r.Duration >= 1
        assert r.UpdatedAt >= r.StartedAt + timedelta(milliseconds=r.Duration)
        if r.Status == "Cancelled":  # cancelled while backing off: due again after StartedAt
            assert r.ScheduledFor > r.StartedAt and r.AttemptNum < 3
        else:  # a claim may come a few microseconds before a key handed out ahead of the clock
            assert r.StartedAt >= r.ScheduledFor - timedelta(microseconds=50)
    assert sum(seen_types.values()) == 20_000
    for mix in history.MIXES:
        assert seen_types[(mix.queue, mix.type)] / 20_000 == pytest.approx(mix.share, abs=0.02)


def test_rows_round_trip_through_the_layout(spark, tmp_path) -> None:
    root = str(tmp_path / "archive")
    layout.write(history.generate(spark, 2000, 3, days=2), root)
    back = layout.read(spark, root)
    assert back.count() == 2000
    assert back.where("Day <> to_date(UpdatedAt)").count() == 0
    assert {r.Queue for r in back.select("Queue").distinct().collect()} == {"Notification", "SyncQueue"}


def test_the_layout_writes_int64_microseconds_and_keeps_the_callers_setting(spark, tmp_path) -> None:
    import pyarrow.parquet as pq

    key = "spark.sql.parquet.outputTimestampType"
    spark.conf.set(key, "INT96")
    try:
        layout.write(history.generate(spark, 50, 3), str(tmp_path / "archive"))
        assert spark.conf.get(key) == "INT96"
    finally:
        spark.conf.unset(key)
    part = next((tmp_path / "archive").rglob("*.parquet"))
    column = pq.ParquetFile(part).schema.column(0)  # EnqueuedAt
    assert column.physical_type == "INT64" and "timeUnit=microseconds" in str(column.logical_type)

"""pipeline.report: every figure checked against pandas/NumPy computed independently from the
same archive files (read with pyarrow, not Spark), and the files it writes.

Percentiles are exact in both (Spark's percentile(), NumPy's method "linear"), so the only
tolerance is floating-point rounding (relative 1e-9); counts and rates must be equal."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from relq.errors import RelqError
from relq.pipeline import charts, figures, history, layout, report, units
from relq.pipeline.spark import EXCLUDED_RULES, settings

ROWS = 20_000
FINISHED = ["Completed", "Failed", "Cancelled", "Terminated", "PartiallyCompleted"]
ENDED_BY_ATTEMPT = ["Completed", "Failed", "PartiallyCompleted", "Terminated"]
PERCENT = (50, 95, 99)
EVIL = "<script>alert('relq')</script> $\\evil{$"
LEASE_EXPIRED = "the lease of the last attempt expired"  # dbo.Next_SyncQueue_utx's Error


# -- the independent computation ----------------------------------------------------------------------


def read_archive(root: Path) -> pd.DataFrame:
    """The archive's rows through pyarrow's Hive partitioning, times as naive UTC."""
    import pyarrow.dataset as ds

    frame = ds.dataset(str(root), format="parquet", partitioning="hive").to_table().to_pandas()
    for column in ("EnqueuedAt", "ScheduledFor", "StartedAt", "UpdatedAt"):
        values = pd.to_datetime(frame[column])
        frame[column] = values.dt.tz_convert("UTC").dt.tz_localize(None) if values.dt.tz else values
    return frame


def micros(values: pd.Series) -> pd.Series:
    """Timestamps as integer microseconds since 1970 (NaN where missing)."""
    out = pd.Series(np.nan, index=values.index, dtype="float64")
    present = values.notna()
    out[present] = values[present].astype("datetime64[us]").astype("int64").astype("float64")
    return out


def with_measures(frame: pd.DataFrame) -> pd.DataFrame:
    """wait_ms and duration_ms as figures.py's docstring defines them, in pandas."""
    frame = frame.copy()
    scheduled = frame["ScheduledFor"].fillna(frame["EnqueuedAt"])
    due = np.maximum(micros(frame["EnqueuedAt"]), micros(scheduled))
    backing_off = (frame["Status"] == "Cancelled") & (scheduled > frame["StartedAt"])
    waited = frame["StartedAt"].notna() & ~backing_off
    frame["wait_ms"] = np.where(waited, np.maximum(0.0, micros(frame["StartedAt"]) - due) / 1000.0, np.nan)
    elapsed = (micros(frame["UpdatedAt"]) - micros(frame["StartedAt"])) / 1000.0
    fallback = frame["StartedAt"].notna() & frame["Status"].isin(ENDED_BY_ATTEMPT)
    lease = frame["Error"].fillna("").astype(str).str.startswith(LEASE_EXPIRED)
    frame["duration_ms"] = np.where(lease, np.nan,
                                    np.where(frame["Duration"].notna(), frame["Duration"].astype("float64"),
                                             np.where(fallback, elapsed, np.nan)))
    return frame


def expected_group(rows: pd.DataFrame) -> dict[str, Any]:
    items = len(rows)
    statuses = {s: int((rows["Status"] == s).sum()) for s in FINISHED}
    statuses["other"] = items - sum(statuses.values())
    retried = int((rows["AttemptNum"] > 1).sum())

    def spread(column: str) -> dict[str, Any]:
        values = rows[column].dropna().to_numpy()
        if not len(values):
            return {"count": 0, **{f"p{p}": None for p in PERCENT}}
        found = np.percentile(values, PERCENT, method="linear")
        return {"count": len(values), **{f"p{p}": float(v) for p, v in zip(PERCENT, found, strict=True)}}

    return {"items": items, "statuses": statuses, "retried": retried, "retry_rate": retried / items,
            "failed": statuses["Failed"], "failure_rate": statuses["Failed"] / items,
            "wait_ms": spread("wait_ms"), "duration_ms": spread("duration_ms")}


def expected_groups(frame: pd.DataFrame) -> dict[tuple, dict[str, Any]]:
    """Every (level, queue, type, step) the report must hold, with its figures."""
    frame = frame.assign(StepKey=frame["Step"].astype("object").where(frame["Step"].notna(), None))
    found: dict[tuple, dict[str, Any]] = {}
    for queue, rows in frame.groupby("Queue"):
        found[("queue", queue, None, None)] = expected_group(rows)
        for type_, of_type in rows.groupby("Type"):
            found[("type", queue, type_, None)] = expected_group(of_type)
            for step, of_step in of_type.groupby("StepKey", dropna=False):
                step = None if step is None or (isinstance(step, float) and np.isnan(step)) else step
                found[("step", queue, type_, step)] = expected_group(of_step)
    return found


def assert_same(found: dict[str, Any], expected: dict[str, Any], where: Any) -> None:
    for key in ("items", "statuses", "retried", "failed"):
        assert found[key] == expected[key], (where, key)
    for key in ("retry_rate", "failure_rate"):
        assert found[key] == pytest.approx(expected[key], rel=1e-12), (where, key)
    for measure in ("wait_ms", "duration_ms"):
        assert found[measure]["count"] == expected[measure]["count"], (where, measure)
        for p in PERCENT:
            want = expected[measure][f"p{p}"]
            got = found[measure][f"p{p}"]
            assert (got is None) == (want is None), (where, measure, p)
            if want is not None:
                assert got == pytest.approx(want, rel=1e-9, abs=1e-9), (where, measure, p)


# -- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def made(spark, tmp_path_factory) -> dict[str, Any]:
    """One archive of ROWS generated rows, its report, and the rows as pandas read them."""
    base = tmp_path_factory.mktemp("report")
    archive = base / "archive"
    layout.write(history.generate(spark, ROWS, seed=11, days=3), str(archive))
    paths = report.run(str(archive), base / "out", spark=spark)
    return {"archive": archive, "paths": paths, "json": json.loads(paths.json.read_text(encoding="utf-8")),
            "rows": with_measures(read_archive(archive))}


def _run(spark, frame, tmp_path: Path) -> dict[str, Any]:
    layout.write(frame, str(tmp_path / "archive"))
    paths = report.run(str(tmp_path / "archive"), tmp_path / "out", spark=spark)
    return {"paths": paths, "json": json.loads(paths.json.read_text(encoding="utf-8"))}


# -- the figures ---------------------------------------------------------------------------------------------


def test_every_group_figure_matches_pandas(made) -> None:
    expected = expected_groups(made["rows"])
    found = {(g["level"], g["queue"], g["type"], g["step"]): g for g in made["json"]["figures"]["groups"]}
    assert set(found) == set(expected)
    assert any(key[0] == "step" and key[3] is None for key in found)  # first-step items, kept apart
    for key, want in expected.items():
        assert_same(found[key], want, key)


def test_the_summary_matches_pandas(made) -> None:
    rows = made["rows"]
    summary = made["json"]["figures"]["summary"]
    assert_same(summary, expected_group(rows), "summary")
    assert summary["items"] == ROWS
    iso = "%Y-%m-%dT%H:%M:%S.%fZ"
    assert summary["first_enqueued"] == rows["EnqueuedAt"].min().strftime(iso)
    assert summary["first_finished"] == rows["UpdatedAt"].min().strftime(iso)
    assert summary["last_finished"] == rows["UpdatedAt"].max().strftime(iso)


def test_the_data_exercises_every_rule_of_the_definitions(made) -> None:
    """The comparison above means something only if the generated rows hit each rule."""
    rows = made["rows"]
    assert (rows["AttemptNum"] == 0).any() and (rows["AttemptNum"] > 1).any()
    assert (rows["ScheduledFor"] > rows["StartedAt"]).any()  # cancelled while backing off: no wait
    ahead = (rows["StartedAt"] < rows["EnqueuedAt"]) & (rows["Status"] != "Cancelled")
    assert ahead.any() and (rows.loc[ahead, "wait_ms"] == 0).all()  # keys ahead of the clock: 0
    assert (rows["ScheduledFor"] > rows["EnqueuedAt"]).any()  # scheduled for later
    assert rows["wait_ms"].notna().sum() < len(rows)
    assert set(rows["Status"]) == set(FINISHED)
    lease = rows["Error"].str.startswith(LEASE_EXPIRED)
    assert lease.any() and rows.loc[lease, "duration_ms"].isna().all()  # a vanished worker: no duration
    assert ((rows["AttemptNum"] > 1) & (rows["Status"] != "Failed") & (rows["Error"] != "")).any()


def test_throughput_per_hour_matches_pandas(made) -> None:
    rows = made["rows"]
    finished = rows[rows["Status"].isin(FINISHED)]
    counts = finished.groupby(["Queue", finished["UpdatedAt"].dt.floor("h"), "Status"]).size()
    expected = sorted((q, h.strftime("%Y-%m-%dT%H:%M:%S.000000Z"), s, int(n))
                      for (q, h, s), n in counts.items())
    found = sorted((r["queue"], r["hour"], r["status"], r["items"])
                   for r in made["json"]["figures"]["throughput"])
    assert found == expected
    assert sum(r[3] for r in found) == len(finished)


def test_each_rule_of_the_definitions_on_rows_made_by_hand(spark, tmp_path) -> None:
    """One queue per rule, so each figure is one row's, worked out from the definitions."""
    from pyspark.sql import functions as F

    day = "2024-05-01 10:00:"
    rows = [  # Queue, Status, AttemptNum, EnqueuedAt, ScheduledFor, StartedAt, UpdatedAt, Duration
        ("Ahead", "Completed", 1, day + "00.000050", day + "00.000050", day + "00.000020", day + "01", 5),
        ("Backoff", "Cancelled", 1, day + "00", day + "10", day + "02", day + "05", 1000),
        ("Later", "Completed", 1, day + "00", "2024-05-01 10:05:00", "2024-05-01 10:05:01.5",
         "2024-05-01 10:05:03.5", None),
        ("Never", "Cancelled", 0, day + "00", day + "00", None, day + "30", None),
        ("Stopped", "Terminated", 2, day + "00", day + "00", day + "01", "2024-05-01 10:01:01", None),
        ("Retried", "Failed", 3, day + "00", day + "20", day + "20.25", day + "21", 750),
        ("Running", "Processing", 1, day + "00", None, day + "03", day + "04", None),
        ("Lease", "Failed", 3, day + "00", day + "00", day + "01", "2024-05-01 10:06:00", 400),
    ]
    times = ("EnqueuedAt", "ScheduledFor", "StartedAt", "UpdatedAt")
    columns = ["Queue", "Status", "AttemptNum", *times, "Duration"]
    kinds = {"AttemptNum": "INT", "Duration": "BIGINT"}
    frame = spark.createDataFrame(rows, ", ".join(f"{c} {kinds.get(c, 'STRING')}" for c in columns))
    frame = frame.select(
        "Queue", "Status", "AttemptNum", "Duration",
        *(F.col(c).cast("timestamp").alias(c) for c in times),
        F.lit("Job").alias("Type"), F.lit(None).cast("string").alias("Step"), F.lit(0).alias("Priority"),
        F.lit(None).cast("string").alias("GroupKey"), F.lit(None).cast("string").alias("DedupKey"),
        F.when(F.col("Queue") == "Lease", F.lit(LEASE_EXPIRED + ": its worker, w1, vanished"))
        .otherwise(F.lit("")).alias("Error"),
        F.col("UpdatedAt").cast("timestamp").alias("ArchivedAt"))
    made = _run(spark, frame, tmp_path)
    groups = {g["queue"]: g for g in made["json"]["figures"]["groups"] if g["level"] == "queue"}
    want = {  # queue: (wait ms, duration ms, retry rate, failure rate)
        "Ahead": (0.0, 5.0, 0.0, 0.0),  # started 30 us before its key: 0, not -0.03
        "Backoff": (None, 1000.0, 0.0, 0.0),  # ScheduledFor is a retry that never ran
        "Later": (1500.0, 2000.0, 0.0, 0.0),  # due at ScheduledFor; no Duration: Updated - Started
        "Never": (None, None, 0.0, 0.0),
        "Stopped": (1000.0, 60000.0, 1.0, 0.0),
        "Retried": (250.0, 750.0, 1.0, 1.0),  # the last attempt's wait, after its backoff
        "Running": (3000.0, None, 0.0, 0.0),  # no ScheduledFor: due at EnqueuedAt; not finished
        "Lease": (1000.0, None, 1.0, 1.0),  # its worker vanished: no duration of that attempt
    }
    for queue, (wait, duration, retry, failure) in want.items():
        g = groups[queue]
        assert (g["wait_ms"]["p50"], g["wait_ms"]["p99"]) == (wait, wait), queue
        assert (g["duration_ms"]["p50"], g["duration_ms"]["p99"]) == (duration, duration), queue
        assert (g["retry_rate"], g["failure_rate"]) == (retry, failure), queue
    assert groups["Running"]["statuses"]["other"] == 1
    expected = expected_groups(with_measures(read_archive(tmp_path / "archive")))  # the independent check
    found = {(g["level"], g["queue"], g["type"], g["step"]): g for g in made["json"]["figures"]["groups"]}
    assert set(found) == set(expected)
    for key, wanted in expected.items():
        assert_same(found[key], wanted, key)
    throughput = {(r["queue"], r["status"]) for r in made["json"]["figures"]["throughput"]}
    assert ("Running", "Processing") not in throughput and ("Lease", "Failed") in throughput


def test_a_null_due_time_is_no_wait_not_zero(spark) -> None:
    """greatest() skips NULLs: without its own check a NULL due time would be a wait of 0."""
    when = "timestamp '2024-05-01 10:00:00'"
    frame = spark.sql(f"""SELECT 'Q' AS Queue, 'T' AS Type, CAST(NULL AS STRING) AS Step,
        'Completed' AS Status, 1 AS AttemptNum, CAST(NULL AS TIMESTAMP) AS EnqueuedAt,
        CAST(NULL AS TIMESTAMP) AS ScheduledFor,
        {when} AS StartedAt, {when} AS UpdatedAt, CAST(5 AS BIGINT) AS Duration, '' AS Error""")
    row = figures.prepare(frame).first()
    assert row["wait_ms"] is None and row["duration_ms"] == 5.0


def test_durations_fall_back_to_updated_minus_started(spark, tmp_path) -> None:
    """dbo.SyncQueueArchive has no Duration: an archive without it still has durations."""
    from pyspark.sql import functions as F

    frame = history.generate(spark, 400, seed=2).withColumn("Duration", F.lit(None).cast("bigint"))
    found = _run(spark, frame, tmp_path)["json"]["figures"]["summary"]
    rows = with_measures(read_archive(tmp_path / "archive"))
    assert rows["Duration"].isna().all()
    assert_same(found, expected_group(rows), "summary")
    assert found["duration_ms"]["count"] == int((rows["StartedAt"].notna()
                                                 & rows["Status"].isin(ENDED_BY_ATTEMPT)).sum())


# -- the files -----------------------------------------------------------------------------------------------


def test_the_json_has_its_documented_shape(made) -> None:
    data = made["json"]
    assert data["schema"] == "relq.pipeline.report" and data["schema_version"] == 1
    assert set(data) == {"schema", "schema_version", "generated_at", "input", "definitions", "figures",
                         "health", "charts"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", data["generated_at"])
    assert data["input"] == {"archive": str(made["archive"]), "master": "local[2]", "remote": None}
    assert set(data["figures"]) == {"summary", "groups", "throughput", "hourly", "errors"}
    assert set(data["figures"]["hourly"][0]) == {"queue", "hour", "enqueued", "finished", "wait_count",
                                                 "wait_ms_p95", "partial"}
    assert set(data["figures"]["errors"][0]) == {"queue", "type", "kind", "rank", "error", "example", "items",
                                                 "texts", "kind_items"}
    assert {g["level"] for g in data["figures"]["groups"]} == {"queue", "type", "step"}
    group_keys = {"level", "queue", "type", "step", "items", "statuses", "retried", "retry_rate", "failed",
                  "failure_rate", "wait_ms", "duration_ms"}
    assert all(set(g) == group_keys for g in data["figures"]["groups"])
    assert all(set(g["wait_ms"]) == {"count", "p50", "p95", "p99"} for g in data["figures"]["groups"])
    assert data["health"]["state"] == "not configured" and data["health"]["queues"] == []
    assert "no SQL Server configured" in data["health"]["note"]
    assert data["charts"] == ["throughput.png", "hourly.png", "wait.png", "duration.png", "rates.png"]
    assert set(data["definitions"]) >= {"wait_ms", "duration_ms", "percentiles", "retry_rate", "failure_rate",
                                        "throughput", "hourly", "errors"}


def test_the_html_shows_the_figures_and_its_pictures_exist(made) -> None:
    paths = made["paths"]
    page = paths.html.read_text(encoding="utf-8")
    sources = re.findall(r'<img src="([^"]+)"', page)
    assert sources == made["json"]["charts"]
    for name in sources:
        picture = paths.html.parent / name
        assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert picture.stat().st_size > 5000, name  # something was drawn
    assert [p.name for p in paths.charts] == sources
    assert "No SQL Server was read" in page and "invoke pipeline.report --conn" in page
    assert "pass --conn" not in page  # pipeline.demo makes this page too, and takes no --conn
    assert f"{ROWS:,}" in page
    summary = made["json"]["figures"]["summary"]
    assert f"{100 * summary['failure_rate']:.2f} %" in page
    assert units.duration(summary["wait_ms"]["p95"]) in page  # human units in the page
    assert "(partial)" in page


def test_names_from_the_data_are_escaped_in_the_html(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    frame = history.generate(spark, 300, seed=4).withColumn(
        "Type", F.when(F.col("Type") == "CustomerSync", F.lit(EVIL)).otherwise(F.col("Type")))
    made = _run(spark, frame, tmp_path)
    assert any(g["type"] == EVIL for g in made["json"]["figures"]["groups"])  # the name as it was
    page = made["paths"].html.read_text(encoding="utf-8")
    assert "<script>" not in page and "alert('relq')" not in page
    assert "&lt;script&gt;alert(&#x27;relq&#x27;)&lt;/script&gt;" in page
    assert all(p.exists() for p in made["paths"].charts)  # matplotlib drew "$...$" as text


def test_a_queue_with_one_row_has_its_own_figures(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    frame = history.generate(spark, 200, seed=8)
    frame = frame.withColumn("Queue", F.when(F.col("EnqueuedAt") == frame.agg(F.min("EnqueuedAt")).first()[0],
                                             F.lit("Lonely")).otherwise(F.col("Queue")))
    made = _run(spark, frame, tmp_path)
    rows = with_measures(read_archive(tmp_path / "archive"))
    lonely = rows[rows["Queue"] == "Lonely"]
    assert len(lonely) == 1
    group = next(g for g in made["json"]["figures"]["groups"]
                 if g["level"] == "queue" and g["queue"] == "Lonely")
    assert_same(group, expected_group(lonely), "Lonely")
    if lonely["wait_ms"].notna().all():
        assert group["wait_ms"]["p50"] == group["wait_ms"]["p99"] == pytest.approx(lonely["wait_ms"].iloc[0])


# -- problems a user can cause ------------------------------------------------------------------------------


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_missing_archive_is_one_line(spark, tmp_path) -> None:
    with pytest.raises(RelqError) as exc:
        report.run(str(tmp_path / "nowhere"), tmp_path / "out", spark=spark)
    assert "no archive at" in _one_line(exc)
    assert not (tmp_path / "out").exists()


def test_an_empty_archive_is_one_line(spark, tmp_path) -> None:
    (tmp_path / "archive").mkdir()
    (tmp_path / "archive" / "_SUCCESS").write_text("")
    with pytest.raises(RelqError) as exc:
        report.run(str(tmp_path / "archive"), tmp_path / "out", spark=spark)
    assert "holds no rows" in _one_line(exc)


def test_no_rows_is_its_own_error_in_the_figures(spark) -> None:
    """Files without rows (another file system, where the folder is not looked into first)."""
    empty = spark.createDataFrame([], layout.ddl() + ", Queue STRING, Type STRING")
    with pytest.raises(figures.Empty):
        figures.compute(empty)


def test_a_folder_that_is_not_an_archive_is_one_line(spark, tmp_path) -> None:
    (tmp_path / "archive").mkdir()
    spark.range(3).write.parquet(str(tmp_path / "archive" / "Queue=X"))
    with pytest.raises(RelqError) as exc:
        report.run(str(tmp_path / "archive"), tmp_path / "out", spark=spark)
    assert "cannot read the archive" in _one_line(exc)


def test_an_archive_that_changed_between_the_passes_is_one_line(spark, tmp_path, monkeypatch) -> None:
    from relq.pipeline import percentiles as exact

    layout.write(history.generate(spark, 50, seed=5), str(tmp_path / "archive"))

    def changed(frame, meanwhile=None):
        raise exact.Changed("('wait_ms', 'Q', 'T', None, None) bucket 7: 3 values counted, 4 found")

    monkeypatch.setattr(figures, "compute", changed)
    with pytest.raises(RelqError) as exc:
        report.run(str(tmp_path / "archive"), tmp_path / "out", spark=spark)
    assert "changed while the report read it" in _one_line(exc)


def test_a_corrupt_parquet_file_is_one_line(spark, tmp_path) -> None:
    archive = tmp_path / "archive"
    layout.write(history.generate(spark, 200, seed=5), str(archive))
    parts = sorted(archive.rglob("part-*.parquet"))
    assert parts
    for part in parts:
        data = part.read_bytes()
        part.write_bytes(data[:4] + b"\0" * (len(data) - 8) + data[-4:])  # magic kept, contents gone
    with pytest.raises(RelqError) as exc:
        report.run(str(archive), tmp_path / "out", spark=spark)
    assert "cannot read the archive" in _one_line(exc)
    assert "An error occurred while calling" not in str(exc.value)


def test_a_session_not_in_utc_is_refused(spark, tmp_path) -> None:
    """Hours are bucketed in the session's time zone: a caller's session must be UTC."""
    layout.write(history.generate(spark, 50, seed=6), str(tmp_path / "archive"))
    kolkata = spark.newSession()
    kolkata.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    with pytest.raises(RelqError) as exc:
        report.run(str(tmp_path / "archive"), tmp_path / "out", spark=kolkata)
    assert "UTC" in _one_line(exc) and "Asia/Kolkata" in str(exc.value)
    assert not (tmp_path / "out").exists()


def test_a_windows_drive_path_is_checked_as_local(spark, tmp_path) -> None:
    with pytest.raises(RelqError) as exc:
        report.run("C:\\relq\\nowhere", tmp_path / "out", spark=spark)
    assert "no archive at" in _one_line(exc)


def test_the_first_step_label_is_no_steps_label() -> None:
    names = [None, "(first step)", '"(first step)"', "(x", "Send", ""]
    labels = [charts.label({"level": "step", "queue": "Q", "type": "T", "step": n}) for n in names]
    assert len(set(labels)) == len(names), labels
    assert labels[0] == "Q / T / (first step)" and labels[4] == "Q / T / Send"


def test_bar_charts_keep_the_groups_with_most_items(tmp_path) -> None:
    groups = [{"level": "step", "queue": "Q", "type": "T", "step": f"S{i}", "items": (i * 37) % 101 + 1,
               "retry_rate": 0.1, "failure_rate": 0.05} for i in range(45)]
    kept = charts.top(groups)
    assert len(kept) == charts.TOP
    assert min(g["items"] for g in kept) >= max(g["items"] for g in groups if g not in kept)
    assert kept == [g for g in groups if g in kept]  # their order kept
    assert charts.rates({"groups": groups}, tmp_path / "rates.png") == "rates.png"


@pytest.fixture
def drawn(monkeypatch) -> Any:
    """The figures the chart functions draw, kept open instead of saved."""
    import matplotlib
    from matplotlib import pyplot as plt

    matplotlib.use("Agg", force=True)
    kept: list[Any] = []
    monkeypatch.setattr(charts, "_save", lambda fig, path: kept.append(fig) or path.name)
    yield kept
    for fig in kept:
        plt.close(fig)


def _hours(queue: str, waits: list[float]) -> list[dict[str, Any]]:
    return [{"queue": queue, "hour": f"2024-05-27T{h:02d}:00:00Z", "enqueued": 50 + h, "finished": 50 + h,
             "wait_count": 1, "wait_ms_p95": w, "partial": False} for h, w in enumerate(waits)]


def test_time_axes_tick_round_durations() -> None:
    def labels(low: float, high: float) -> list[str]:
        return [charts.tick_label(t) for t in charts.time_ticks(low, high)[0]]

    assert labels(300, 100_000) == ["1 s", "10 s", "1 min"]  # 100 s is not a tick "1.7 min"
    assert labels(30_000, 600_000) == ["1 min", "10 min"]
    assert labels(300, 8_000) == ["500 ms", "1 s", "2 s", "5 s"]
    assert labels(2_500, 9_000) == ["3 s", "4 s", "5 s", "6 s", "7 s", "8 s", "9 s"]
    assert labels(0.02, 3) == ["0.1 ms", "1 ms"]
    assert labels(1_800_000, 30_000_000) == ["30 min", "1 h", "2 h", "3 h", "6 h"]
    major, minor = charts.time_ticks(300, 100_000)
    assert minor == [500, 2_000, 5_000, 20_000, 30_000] and not set(major) & set(minor)
    for low in np.geomspace(1e-3, 1e9, 23):
        for span in (1.5, 3, 10, 1e3, 1e8):
            values = charts.time_ticks(low, low * span)[0]
            ticks = [charts.tick_label(t) for t in values]
            assert 1 <= len(ticks) <= 8 and all(low <= t <= low * span for t in values), (low, span, ticks)
            if span >= 3:  # a narrower range may hold no round duration: then its middle, rounded
                assert all(re.fullmatch(r"[1-9]\d* (ms|s|min|h|d)|0\.0*[1-9] ms", t) for t in ticks), ticks


def test_the_wait_charts_label_round_durations(drawn) -> None:
    group = {"level": "type", "queue": "Q", "type": "T", "items": 10,
             "wait_ms": {"count": 10, "p50": 300.0, "p95": 40_000.0, "p99": 100_000.0}}
    charts.percentiles({"groups": [group]}, "wait_ms", "wait", Path("wait.png"))
    charts.hourly({"hourly": _hours("Q", [300.0, 40_000.0, 100_000.0])}, Path("hourly.png"))
    axes = [drawn[0].axes[0].xaxis, drawn[1].axes[1].yaxis]
    for fig in drawn:
        fig.canvas.draw()
    for axis in axes:
        shown = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
        assert "1 min" in shown and "10 s" in shown, shown
        assert not any("." in t for t in shown), shown  # no 1.7 min, no 10.0 s
        assert not [t.get_text() for t in axis.get_ticklabels(minor=True) if t.get_text()]


def test_the_hourly_chart_draws_enqueued_over_finished(drawn) -> None:
    charts.hourly({"hourly": _hours("A", [5.0, 6.0]) + _hours("B", [7.0, 8.0])}, Path("hourly.png"))
    lines = {line.get_label(): line for line in drawn[0].axes[0].get_lines()}
    for queue in ("A", "B"):
        finished, enqueued = lines[f"{queue} finished"], lines[f"{queue} enqueued"]
        assert list(finished.get_ydata()) == list(enqueued.get_ydata())  # the same counts: both must show
        assert enqueued.get_zorder() > max(line.get_zorder() for line in lines.values()
                                           if line.get_label().endswith("finished"))
        assert enqueued.get_linestyle() == "--" and finished.get_linewidth() > enqueued.get_linewidth()
        assert finished.get_alpha() < 1


def test_the_health_section_without_a_server_names_the_command_that_reads_one() -> None:
    from relq.pipeline import html

    page = html._health({"state": "not configured", "note": report.NO_SERVER, "queues": []})
    assert "<code>invoke pipeline.report --conn '&lt;ODBC connection string&gt;'</code>" in page
    assert "--conn" not in page.replace("invoke pipeline.report --conn", "")  # no bare "pass --conn"
    assert "invoke pipeline.demo</code> reads no server" in page
    failed = html._health({"state": "failed", "note": "could not be read from S: <login failed>",
                           "queues": []})
    assert "could not be read from S: &lt;login failed&gt;" in failed


def test_the_health_section_shows_the_unfinished_states_the_health_view_counts() -> None:
    """QueueHealth_V counts the unfinished states only: the report's table has a column for
    each and none for a finished state, which would always read 0."""
    from dataclasses import asdict

    from relq import status
    from relq.pipeline import html

    (queue,) = status.summarize(
        [("SyncQueue", "Pending", 7, 30, 0), ("SyncQueue", "Processing", 2, None, 1),
         ("SyncQueue", "Error", 1, None, 0), ("SyncQueue", "Paused", 0, None, 0)],
        [("SyncQueue", 4.0, 0.5, 0.25, 120, 900)])
    page = html._health({"state": "read", "source": report.HEALTH_SOURCE, "server": "S",
                         "read_at": "2026-11-28 09:00", "queues": [asdict(queue)]})
    head = page[page.index("<tr>"):page.index("</tr>")]
    assert all(f">{s}<" in head for s in status.UNFINISHED)
    assert not any(f">{s}<" in head for s in status.FINISHED)
    row = page[page.index("<tr>", page.index("</tr>")):]
    assert ">SyncQueue<" in row and ">7<" in row and ">2<" in row and ">4.0<" in row


def test_settings_come_from_arguments_then_the_environment_then_configuration(monkeypatch) -> None:
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    config = {"relq": {"pipeline": {"archive": "/data/archive", "report": "/data/report", "master": "spark://m:7077"}}}
    assert report.settings(config) == ("/data/archive", "/data/report", "spark://m:7077", None)
    assert report.settings(config, "a", "b", "local[4]") == ("a", "b", "local[4]", None)
    assert report.settings(config, "a", "b", remote="sc://s:15002") == ("a", "b", None, "sc://s:15002")
    assert report.settings({}, "a") == ("a", report.DEFAULT_OUT, None, None)
    monkeypatch.setenv("SPARK_REMOTE", "sc://env:15002")
    assert report.settings(config) == ("/data/archive", "/data/report", None, "sc://env:15002")
    assert report.settings(config, master="local[4]")[2:] == ("local[4]", None)
    with pytest.raises(RelqError, match="pass --archive"):
        report.settings({"relq": {"mssql": "x"}})


# -- why: hour by hour, error texts -------------------------------------------------------------------------


def _hour(values: pd.Series) -> pd.Series:
    return values.dt.floor("h").dt.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def test_hour_by_hour_matches_pandas(made) -> None:
    rows = made["rows"]
    enqueued = rows.groupby(["Queue", _hour(rows["EnqueuedAt"])]).size()
    finished_rows = rows[rows["Status"].isin(FINISHED)]
    finished = finished_rows.groupby(["Queue", _hour(finished_rows["UpdatedAt"])]).size()
    waited = rows[rows["wait_ms"].notna()]
    by_start = waited.groupby(["Queue", _hour(waited["StartedAt"])])["wait_ms"]
    waits = {key: group.to_numpy() for key, group in by_start}
    found = {(r["queue"], r["hour"]): r for r in made["json"]["figures"]["hourly"]}
    assert set(found) == set(enqueued.index) | set(finished.index) | set(waits)
    for key, r in found.items():
        assert r["enqueued"] == enqueued.get(key, 0), key
        assert r["finished"] == finished.get(key, 0), key
        values = waits.get(key, np.array([]))
        assert r["wait_count"] == len(values), key
        if len(values):
            assert r["wait_ms_p95"] == pytest.approx(float(np.percentile(values, 95)), rel=1e-9), key
        else:
            assert r["wait_ms_p95"] is None
    last = _hour(rows["UpdatedAt"]).max()
    assert {key[1] for key, r in found.items() if r["partial"]} == {last}
    assert made["json"]["figures"]["summary"]["partial_hour"] == last
    assert sum(r["enqueued"] for r in found.values()) == len(rows)


def _grouped(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(figures._VARYING, "#", text))


def test_error_texts_match_pandas(made) -> None:
    rows = made["rows"]
    text = rows["Error"].fillna("").str.strip(" ")
    kind = np.where(rows["Status"] == "Failed", "failed",
                    np.where((rows["AttemptNum"] > 1) & (text != ""), "retried", None))
    shown = text.where(text != "", figures.NO_ERROR_TEXT).str.slice(0, figures.ERROR_CHARS)
    frame = pd.DataFrame({"queue": rows["Queue"], "type": rows["Type"], "kind": kind, "shown": shown})
    frame = frame[frame["kind"].notna()]
    frame["error"] = frame["shown"].map(_grouped)
    expected = []
    for (queue, type_, k), of_kind in frame.groupby(["queue", "type", "kind"]):
        counts = of_kind.groupby("error").agg(items=("shown", "size"), example=("shown", "min")).reset_index()
        counts = counts.sort_values(["items", "error"], ascending=[False, True]).head(figures.TOP_ERRORS)
        expected += [{"queue": queue, "type": type_, "kind": k, "rank": i + 1, "error": r.error,
                      "example": r.example, "items": int(r.items), "texts": int(of_kind["error"].nunique()),
                      "kind_items": len(of_kind)} for i, r in enumerate(counts.itertuples())]
    found = made["json"]["figures"]["errors"]
    assert found == expected
    assert {r["kind"] for r in found} == {"failed", "retried"}
    assert any(r["texts"] > 1 and "#" in r["error"] for r in found)  # numbers grouped, not each text apart


def test_error_texts_are_grouped_and_counted_by_hand(spark, tmp_path) -> None:
    texts = ["timeout after 30 s (request 12)", "timeout after 30 s (request 977)", "", "  ",
             "bad id 0x1F and 123e4567-e89b-12d3-a456-426614174000"]
    frame = history.generate(spark, len(texts) * 40, seed=3).limit(len(texts))
    from pyspark.sql import functions as F

    marked = frame.withColumn("n", F.monotonically_increasing_id())
    ids = [r["n"] for r in marked.select("n").orderBy("n").collect()]
    error = F.lit(None).cast("string")
    for i, text in zip(ids, texts, strict=True):
        error = F.when(F.col("n") == i, F.lit(text)).otherwise(error)
    failed = marked.withColumn("Error", error).withColumn("Status", F.lit("Failed")).drop("n")
    found = _run(spark, failed, tmp_path)["json"]["figures"]["errors"]
    by_text = {}
    for r in found:
        by_text[r["error"]] = by_text.get(r["error"], 0) + r["items"]
    assert by_text["timeout after # s (request #)"] == 2
    assert by_text[figures.NO_ERROR_TEXT] == 2  # empty and blank alike
    assert by_text["bad id # and #"] == 1


def test_error_texts_are_counted_as_written_before_they_are_grouped(spark, tmp_path, monkeypatch) -> None:
    """Two aggregations, as figures.error_texts writes them: Spark's optimizer would make them one
    over every failed item (figures.COLLAPSES_COUNTS), and the caller's rules are left as they were."""
    layout.write(history.generate(spark, 2000, seed=5), str(tmp_path / "archive"))
    real, planned = figures.error_texts, []

    def kept(rows):
        planned.append(real(rows))
        return planned[-1]

    monkeypatch.setattr(figures, "error_texts", kept)
    spark.conf.set(EXCLUDED_RULES, "org.apache.spark.sql.catalyst.optimizer.ConstantFolding")
    try:
        assert figures.errors(layout.read(spark, str(tmp_path / "archive"), common_only=True))
        assert spark.conf.get(EXCLUDED_RULES) == "org.apache.spark.sql.catalyst.optimizer.ConstantFolding"
    finally:
        spark.conf.unset(EXCLUDED_RULES)
    plan = planned[0]._jdf.queryExecution().optimizedPlan().toString()  # as planned by errors()
    assert plan.count("Aggregate [") == 2, plan


# -- exact percentiles from histograms -----------------------------------------------------------------------


def test_percentiles_from_buckets_are_exact_with_ties_zeros_and_negatives(spark) -> None:
    """Values that share buckets, equal values, zeros and negatives (one bucket), a group of one:
    each group's percentiles as NumPy's, whatever the bucket width."""
    from pyspark.sql import functions as F

    from relq.pipeline import percentiles as exact

    rng = np.random.default_rng(5)
    groups = {
        "wide": np.concatenate([rng.lognormal(3, 2, 3000), np.zeros(40), -rng.random(30)]),
        "ties": np.repeat([1.0, 2.0, 2.0, 3.5, 1000.0], 200),
        "one": np.array([42.0]),
        "tiny": rng.random(500) * 1e-6,
    }
    rows = [(name, float(v)) for name, values in groups.items() for v in values]
    for scale in (1, 256):
        frame = spark.createDataFrame(rows, "Step STRING, v DOUBLE").select(
            F.lit("x").alias("s"), F.lit("Q").alias("Queue"), F.lit("T").alias("Type"), "Step",
            F.lit(None).cast("long").alias("hour"), "v", exact.bucket(F.col("v"), scale).alias("b"))
        counted = frame.groupBy(*exact.KEYS, "b").count().collect()
        found: dict = {}
        for r in counted:
            found.setdefault(tuple(r[k] for k in exact.KEYS), {})[r["b"]] = r["count"]
        members = {("x", 0, "Q", "T", name, None): [("x", "Q", "T", name, None)] for name in groups}
        members[("x", 7, None, None, None, None)] = [("x", "Q", "T", name, None) for name in groups]
        plan = exact.Plan(found, members, dict.fromkeys(members, figures.PERCENTILES))
        plan.pick(spark, frame)
        everything = np.concatenate(list(groups.values()))
        for group in members:
            values = groups[group[4]] if group[1] == 0 else everything
            want = np.percentile(values, PERCENT, method="linear")
            got = [plan.value(group, p) for p in figures.PERCENTILES]
            assert got == pytest.approx(list(want), rel=1e-12, abs=1e-15), (scale, group)
        assert len(plan.values) <= 2 * len(figures.PERCENTILES) * len(members)  # only the ranks needed


def test_the_report_reads_a_small_archive_in_more_tasks_than_cores_and_leaves_the_setting(
        spark, tmp_path) -> None:
    """Spark packs small files into as many read tasks as the cores, however uneven; the
    report's passes ask for four a core (figures.sized), and the caller's session is as it was."""
    layout.write(history.generate(spark, 3000, seed=8, days=3), str(tmp_path / "archive"))
    files = len(list((tmp_path / "archive").rglob("*.parquet")))
    cores = spark.sparkContext.defaultParallelism
    assert files > cores

    def tasks():
        return layout.read(spark, str(tmp_path / "archive"), common_only=True).rdd.getNumPartitions()

    alone = tasks()
    with settings(spark, figures.sized(cores)):
        sized = tasks()
    assert alone <= cores < sized <= 4 * cores
    figures.compute(layout.read(spark, str(tmp_path / "archive"), common_only=True))
    assert spark.conf.get("spark.sql.files.minPartitionNum", None) is None
    assert tasks() == alone


def test_rows_that_changed_between_the_passes_are_refused_not_reported(spark) -> None:
    """A row appended after the histograms were counted lands in a bucket the plan reads: the
    pick finds more values there than the histograms counted, and says so instead of reading a
    wrong rank."""
    from pyspark.sql import functions as F

    from relq.pipeline import percentiles as exact

    def facts(values):
        return spark.createDataFrame([(float(v),) for v in values], "v DOUBLE").select(
            F.lit("x").alias("s"), F.lit("Q").alias("Queue"), F.lit("T").alias("Type"),
            F.lit(None).cast("string").alias("Step"), F.lit(None).cast("long").alias("hour"), "v",
            exact.bucket(F.col("v"), 256).alias("b"))

    before = [1.0, 2.0, 3.0, 4.0, 5.0]
    found: dict = {}
    for r in facts(before).groupBy(*exact.KEYS, "b").count().collect():
        found.setdefault(tuple(r[k] for k in exact.KEYS), {})[r["b"]] = r["count"]
    key = ("x", "Q", "T", None, None)
    group = ("x", 0, "Q", "T", None, None)
    plan = exact.Plan(found, {group: [key]}, {group: (0.5,)})
    plan.pick(spark, facts(before))
    assert plan.value(group, 0.5) == 3.0
    changed = exact.Plan(found, {group: [key]}, {group: (0.5,)})
    with pytest.raises(exact.Changed, match="1 values counted, 2 found"):
        changed.pick(spark, facts([*before, 3.0]))


def test_buckets_grow_with_the_value(spark) -> None:
    from pyspark.sql import functions as F

    from relq.pipeline import percentiles as exact

    values = sorted({0.0, -1.0, 5e-324, 1e-9, 0.999999, 1.0, 1.0000001, 2.0, 1e6, 1e300,
                     *np.random.default_rng(1).lognormal(0, 5, 2000).tolist()})
    buckets = [r["b"] for r in spark.createDataFrame([(v,) for v in values], "v DOUBLE")
               .select(exact.bucket(F.col("v"), 256).alias("b")).collect()]
    order = sorted(zip(values, buckets, strict=True))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(order))
    nothing = spark.range(1).select(exact.bucket(F.lit(None).cast("double"), 256).alias("b")).first()
    assert nothing["b"] is None


# -- the page's formats -------------------------------------------------------------------------------------


def test_durations_read_in_human_units() -> None:
    assert [units.duration(v) for v in (None, 0.0, 0.35, 5.25, 350.4, 50_071.0, 750_000.0, 11_520_000.0,
                                        200_000_000.0)] == [
        "-", "0.00 ms", "0.35 ms", "5.2 ms", "350 ms", "50.1 s", "12.5 min", "3.2 h", "2.3 d"]


def test_a_lone_type_or_step_is_one_row() -> None:
    from relq.pipeline.html import shown

    def group(level, queue, type_=None, step=None):
        return {"level": level, "queue": queue, "type": type_, "step": step}

    groups = [group("queue", "N"), group("type", "N", "Reset"), group("step", "N", "Reset", None),
              group("queue", "S"), group("type", "S", "A"), group("step", "S", "A", "Fetch"),
              group("type", "S", "B"), group("step", "S", "B", None), group("step", "S", "B", "Push")]
    labels = [name for _, name in shown(groups)]
    assert labels == ["N / Reset", "S", "S / A (all at step Fetch)", "S / B", "S / B / (first step)",
                      "S / B / Push"]


def test_an_archive_of_int96_and_int64_files_reads_as_one(spark, tmp_path) -> None:
    """Archives written before layout.write chose INT64 microseconds hold INT96 timestamps;
    a later run appends INT64 files beside them: the report reads both."""
    from pyspark.sql import functions as F

    key = "spark.sql.parquet.outputTimestampType"
    old = history.generate(spark, 600, seed=12, days=2).withColumn("Day", F.to_date("UpdatedAt"))
    spark.conf.set(key, "INT96")
    try:
        old.write.partitionBy(*layout.PARTITIONS).parquet(str(tmp_path / "archive"))
    finally:
        spark.conf.unset(key)
    layout.write(history.generate(spark, 400, seed=13, days=2), str(tmp_path / "archive"))
    paths = report.run(str(tmp_path / "archive"), tmp_path / "out", spark=spark)
    found = json.loads(paths.json.read_text(encoding="utf-8"))["figures"]
    rows = with_measures(read_archive(tmp_path / "archive"))
    assert_same(found["summary"], expected_group(rows), "summary")
    assert found["summary"]["items"] == 1000

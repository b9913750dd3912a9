"""The pipeline on the three kinds of Spark session, with the same figures: the classic local
session the other tests use, a Spark Connect server on local[2] (its own JVM: the pipeline is
its client), and a standalone cluster (a master, a worker and its executor, each a process of its
own; the driver a classic one in a process of its own). The servers are the session's
(conftest.py, servers.py): started once, on loopback, stopped at the end.

A few end-to-end runs rather than the suite three times: the report (and, on Spark Connect, the
demo command, which has the server write its archive), the archive step on copies of one fake
store, enqueue's partitions and the notifications sent from the driver, and the one-line error a
Spark Connect exception becomes."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from invoke import Config, MockContext
from rich.console import Console

from relq.errors import RelqError
from relq.pipeline import history, layout, report
from relq.pipeline.archive import archive
from relq.pipeline.enqueue import enqueue, read_input
from relq.pipeline.spark import session
from tests.conftest import REPO
from tests.pipeline.fake_store import FakeStore, now

ROWS = 3000  # history rows: every figure has groups, hours and error texts
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"  # PySpark's: pyspark.sql.functions build Spark Connect columns
TYPES = ("CustomerSync", "InventorySync")
SCHEMA = "Type STRING, EntityKey STRING, Payload STRING, Priority STRING"
NOTIFICATIONS = "UserID STRING, Username STRING, OTP STRING, EmailTo STRING"
TEST_CONF = {"spark.sql.shuffle.partitions": "4"}  # as the local session's


@contextmanager
def connect_mode() -> Iterator[None]:
    """pyspark.sql.functions building Spark Connect columns for the block, as in a process of
    Spark Connect only. This process's classic session (the other tests') needs them classic:
    PySpark decides by this variable, process-wide, at each call."""
    before = os.environ.get(CONNECT_MODE)
    os.environ[CONNECT_MODE] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONNECT_MODE, None)


@contextmanager
def connected(url: str) -> Iterator[Any]:
    """A Spark Connect session of its own on the server, in connect_mode, stopped after."""
    with connect_mode():
        spark = session(remote=url, **TEST_CONF)
        try:
            yield spark
        finally:
            spark.stop()


def figures_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))["figures"]


def rows_of(root: Path) -> list[dict[str, Any]]:
    """An archive's rows as pyarrow reads them (no Spark), in key order."""
    table = ds.dataset(str(root), format="parquet", partitioning="hive").to_table()
    return sorted(table.to_pylist(), key=lambda r: (str(r["Queue"]), r["EnqueuedAt"]))


def filled(spark, path: Path, count: int) -> FakeStore:
    """A fake queue of ``count`` items (enqueued by the local session), two thirds finished two
    hours ago, the rest pending."""
    path.parent.mkdir(parents=True, exist_ok=True)
    store = FakeStore(str(path)).create()
    rows = [("CustomerSync" if n % 3 else "InventorySync", f"E-{n}", None, None) for n in range(count)]
    enqueue(spark, store, "SyncQueue", spark.createDataFrame(rows, SCHEMA), known_types=TYPES,
            rejects=str(path.parent / "rejects-fill"), partitions=2)
    store.finish("Completed", where="CAST(substr(EntityKey, 3) AS INTEGER) % 3 <> 2")
    return store


def on_cluster(master: str, given: dict[str, Any], tmp: Path) -> subprocess.Popen:
    """tests/pipeline/on_cluster.py in a process of its own (started now, read later), its
    temporary files in ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in (CONNECT_MODE, "SPARK_REMOTE", "RELQ_MSSQL")}
    env.update({"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(tmp),
                "SPARK_LOCAL_DIRS": str(tmp), "PYTHONPATH": os.pathsep.join(
                    p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)})
    conf = {**TEST_CONF, "spark.default.parallelism": "4", "spark.ui.enabled": "false",
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": "1g", "spark.cores.max": "2"}
    return subprocess.Popen([sys.executable, "-m", "tests.pipeline.on_cluster",
                             json.dumps({"master": master, "conf": conf, **given})],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_report_and_the_archive_step_give_the_same_figures_locally_on_spark_connect_and_on_a_cluster(
        spark, connect_url, cluster_url, servers_root, tmp_path, monkeypatch) -> None:
    import tasks
    from bench.pipeline_duckdb import differences
    from bench.pipeline_duckdb import figures as duckdb_figures

    history_root = tmp_path / "history"
    layout.write(history.generate(spark, ROWS), str(history_root), mode="overwrite")
    first = filled(spark, tmp_path / "local" / "queue.sqlite", 30)
    stores = {}
    for name in ("connect", "cluster"):
        (tmp_path / name).mkdir()
        stores[name] = FakeStore(str(shutil.copy(first.path, tmp_path / name / "queue.sqlite")))
    stores["local"] = first
    when = now()
    given = {"archive": str(history_root), "out": str(tmp_path / "cluster" / "report"),
             "store": stores["cluster"].path, "root": str(tmp_path / "cluster" / "archive"),
             "now": when.isoformat()}
    cluster = on_cluster(cluster_url, given, servers_root / "cluster-driver")
    try:
        local = report.run(str(history_root), tmp_path / "local" / "report", spark=spark)
        archived = {"local": archive(spark, stores["local"], "SyncQueue", str(tmp_path / "local" / "archive"),
                                     older_than_minutes=60, partitions=3, now=when)}
        # The command line's way to a server: SPARK_REMOTE, no option; a relative --out, which the
        # server (its working folder is not this one) gets as an absolute path.
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("SPARK_REMOTE", connect_url)
        with connect_mode():
            tasks.pipeline_demo(MockContext(config=Config()), rows=str(ROWS), out="demo")
        monkeypatch.delenv("SPARK_REMOTE")
        with connected(connect_url) as remote:
            out = io.StringIO()
            archived["connect"] = archive(remote, stores["connect"], "SyncQueue",
                                          str(tmp_path / "connect" / "archive"), older_than_minutes=60,
                                          partitions=3, now=when, console=Console(file=out, width=100))
        cluster_output, cluster_errors = cluster.communicate(timeout=900)
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
    assert cluster.returncode == 0, cluster_errors[-3000:]
    found = json.loads(cluster_output.strip().splitlines()[-1])

    expected = figures_of(local.json)
    assert differences(expected, duckdb_figures(str(history_root))) == []  # exact: the independent oracle
    demo_json = tmp_path / "demo" / "report.json"
    assert (tmp_path / "demo" / "archive" / "Queue=SyncQueue").is_dir()  # written by the server, here
    assert figures_of(demo_json) == expected  # the same seed: the same rows
    assert figures_of(Path(found["report"])) == expected
    assert json.loads(demo_json.read_text())["input"] == {"archive": "demo/archive", "master": "local[2]",
                                                          "remote": connect_url}
    assert json.loads(Path(found["report"]).read_text())["input"] == {
        "archive": str(history_root), "master": cluster_url, "remote": None}

    results = {name: asdict(result) for name, result in archived.items()}
    assert found["archive"] == {**results["local"], "cutoff": results["local"]["cutoff"].isoformat()}
    assert (results["local"]["read"], results["local"]["purged"]) == (20, 20)
    assert results["connect"] == results["local"]
    expected_rows = rows_of(tmp_path / "local" / "archive")
    assert len(expected_rows) == 20
    assert rows_of(tmp_path / "connect" / "archive") == expected_rows
    assert rows_of(tmp_path / "cluster" / "archive") == expected_rows
    assert all(len(store.rows()) == 10 for store in stores.values())
    assert found["readers_on_executors"] and found["driver"] not in stores["cluster"].pids("read")
    assert "read: stage" in out.getvalue() and "purge: stage" in out.getvalue()  # the server's progress


def test_enqueue_on_spark_connect_sends_from_its_partitions_and_the_notifications_from_here(
        spark, connect_url, tmp_path) -> None:
    rows = [("CustomerSync", f"C-{n}", json.dumps({"n": n}), None) for n in range(50)]
    rows += [rows[0], ("Unknown", "C-x", None, None), ("CustomerSync", "C-y", "{not json", None),
             ("InventorySync", "I-1", None, "7")]
    given = tmp_path / "items"
    spark.createDataFrame(rows, SCHEMA).coalesce(1).write.json(str(given))
    store = FakeStore(str(tmp_path / "queue.sqlite")).create()
    notices = FakeStore(str(tmp_path / "notices.sqlite")).create()
    archive_root = tmp_path / "archive"

    with connected(connect_url) as remote:
        frame = read_input(remote, str(given), "json")
        options = {"known_types": TYPES, "rejects": str(tmp_path / "rejects"), "partitions": 3,
                   "archive": str(archive_root)}
        first = enqueue(remote, store, "SyncQueue", frame, **options)  # no archive yet: nothing to skip
        first_calls = store.calls("enqueue")
        store.finish(where="EntityKey IN ('C-1', 'C-2')")
        archive(remote, store, "SyncQueue", str(archive_root), older_than_minutes=60, partitions=2)
        again = enqueue(remote, store, "SyncQueue", frame, **options)
        people = [(str(n), f"user{n}", "A1B2C3", f"u{n}@example.com") for n in range(1, 9)]
        people = remote.createDataFrame([*people, ("0", "nobody", "A1B2C3", "x@example.com")], NOTIFICATIONS)
        sent = enqueue(remote, notices, "Notification", people, rejects=str(tmp_path / "notice-rejects"),
                       limit=3)
        with pytest.raises(RelqError, match=r"^/nowhere/items: cannot read it as json \(\[PATH_NOT_FOUND\] "):
            read_input(remote, "/nowhere/items", "json")

    assert asdict(first) == {"rows": 54, "rejected": 2, "skipped": 0, "enqueued": 51, "duplicates": 1}
    reasons = sorted(r["Reason"] for r in ds.dataset(str(tmp_path / "rejects")).to_table().to_pylist())
    assert reasons == ["Payload is not a JSON object or array", "Type is not a job type of this queue"]
    assert len(first_calls) == 3  # a call from each partition (52 rows, at most 4,000 a call)
    assert os.getpid() not in store.pids("enqueue")  # from the server's Python workers
    assert sorted(r["EntityKey"] for r in store.rows()) == sorted(
        {f"C-{n}" for n in range(50)} - {"C-1", "C-2"} | {"I-1"})
    # C-1 and C-2 are archived: the re-run skips them; the others are still pending (duplicates)
    assert (again.skipped, again.enqueued, again.duplicates) == (2, 0, 50)
    assert (sent.rows, sent.rejected, sent.enqueued) == (9, 1, 8)
    assert notices.pids("enqueue") == {os.getpid()}  # notifications go from here, each once
    assert sorted(size for size, _, _ in notices.calls("enqueue")) == [2, 3, 3]


def test_a_corrupt_archive_read_through_spark_connect_is_one_line(connect_url, tmp_path) -> None:
    day = tmp_path / "archive" / "Queue=SyncQueue" / "Type=A" / "Day=2024-06-03"
    day.mkdir(parents=True)
    (day / "part-0.parquet").write_bytes(b"not a parquet file, but named one")

    with connect_mode(), pytest.raises(RelqError) as info:
        report.run(str(tmp_path / "archive"), tmp_path / "out", remote=connect_url)

    line = str(info.value)
    assert line.startswith(f"cannot read the archive {tmp_path / 'archive'}: ") and "\n" not in line
    assert "part-0.parquet" in line or "Parquet" in line, line
    assert "JVM stacktrace" not in line and "\tat " not in line

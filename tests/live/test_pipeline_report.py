"""pipeline.report against a real SQL Server: with a connection, the report carries the live
health views (read through relq.status, as `invoke status` reads them) beside the archive's
figures; an unreachable server leaves the archive's figures and says why."""

from __future__ import annotations

import json

import pytest

from relq import db
from relq.pipeline import history, layout, report
from tests.pipeline.conftest import spark  # noqa: F401 - the one shared Spark session

pytestmark = pytest.mark.mssql


def test_the_report_includes_the_live_health_views(mssql, live_database: str, spark, tmp_path) -> None:  # noqa: F811
    conn_str = db.with_database(mssql.conn_str, live_database)
    connection = db.connect(conn_str)
    try:
        db.run_batch(connection.cursor(), """
            SET NOCOUNT ON;
            DECLARE @Items dbo.SyncQueueItemList;
            INSERT INTO @Items (ItemNo, [Type], EntityKey)
            VALUES (1, 'CustomerSync', N'pipeline-report-test');
            EXEC dbo.Add_SyncQueue_trx @Items = @Items;
        """)
    finally:
        connection.close()
    layout.write(history.generate(spark, 500, seed=1), str(tmp_path / "archive"))

    paths = report.run(str(tmp_path / "archive"), tmp_path / "out", conn=conn_str, spark=spark)

    data = json.loads(paths.json.read_text(encoding="utf-8"))
    health = data["health"]
    assert paths.health == health["state"] == "read", health["note"]
    assert health["source"] == "dbo.QueueHealth_V, dbo.QueueThroughput_V"
    queues = {q["queue"]: q for q in health["queues"]}
    assert {"Notification", "SyncQueue"} <= set(queues)
    assert queues["SyncQueue"]["items"]["Pending"] >= 1
    assert set(queues["SyncQueue"]) >= {"items", "oldest_due_s", "past_lease", "completed_per_min", "p95_ms"}
    password = dict((k.casefold(), v) for k, v in db.parse(conn_str)).get("pwd")
    text = paths.json.read_text(encoding="utf-8") + paths.html.read_text(encoding="utf-8")
    assert not password or password not in text  # the server is named, its password never
    page = paths.html.read_text(encoding="utf-8")
    assert "dbo.QueueHealth_V" in page and "<td>SyncQueue</td>" in page
    assert data["figures"]["summary"]["items"] == 500  # the archive's figures are there too


def test_a_server_that_cannot_be_read_is_named_in_the_report(mssql, spark, tmp_path) -> None:  # noqa: F811
    conn_str = db.with_database(mssql.conn_str, "relq_no_such_database_for_the_report")
    layout.write(history.generate(spark, 50, seed=2), str(tmp_path / "archive"))

    paths = report.run(str(tmp_path / "archive"), tmp_path / "out", conn=conn_str, spark=spark)

    health = json.loads(paths.json.read_text(encoding="utf-8"))["health"]
    assert paths.health == health["state"] == "failed"
    assert "could not be read" in health["note"] and "\n" not in health["note"]
    assert health["queues"] == []

"""bench/pipeline_duckdb.py: DuckDB's figures of an archive are the report's (the bench's
cross-check), and the comparison finds a figure that differs."""

from __future__ import annotations

import copy
import json

import pytest

from relq.pipeline import history, layout, report

pytest.importorskip("duckdb", reason="no duckdb: pip install -e '.[dev]'")

from bench.pipeline_duckdb import differences, figures


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("duckdb")
    archive = base / "archive"
    layout.write(history.generate(spark, 6000, seed=21, days=2), str(archive))
    paths = report.run(str(archive), base / "out", spark=spark)
    return json.loads(paths.json.read_text(encoding="utf-8"))["figures"], figures(str(archive), threads=2)


def test_duckdb_computes_the_reports_figures(both) -> None:
    spark, duck = both
    assert differences(spark, duck) == []
    assert len(duck["groups"]) == len(spark["groups"]) > 3
    assert duck["hourly"] and duck["errors"] and duck["throughput"]


def test_a_figure_that_differs_is_found(both) -> None:
    spark, duck = both
    for change in ("count", "percentile", "error", "hour"):
        changed = copy.deepcopy(spark)
        if change == "count":
            changed["groups"][0]["statuses"]["Failed"] += 1
        elif change == "percentile":
            changed["summary"]["wait_ms"]["p95"] *= 1 + 1e-6
        elif change == "error":
            changed["errors"][0]["items"] += 1
        else:
            changed["hourly"].pop()
        assert differences(changed, duck), change

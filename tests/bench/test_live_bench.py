"""A tiny benchmark run against a real SQL Server, end to end: the plan check, then two
scenarios of two-second arms at a backlog of 1,000 with two workers. It checks that the
claims' plans pass, the report's shape and that every item claimed was completed, never
how fast anything went."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from bench import report as reports
from bench.scenarios import Settings, run

pytestmark = [pytest.mark.mssql, pytest.mark.bench]

TINY = Settings(seconds=2, workers=2, batch=10, backlog=1_000, small_backlog=1_000, large_backlog=2_000,
                purge_items=1_000, plan_backlog=10_000)


def test_a_tiny_run_measures_completes_every_claim_and_reports(mssql, tmp_path: Path) -> None:
    result = run(mssql, TINY, ["plans", "workers", "batch"], console=Console(stderr=True))
    assert result.problems == []
    assert [s.name for s in result.scenarios] == ["workers", "batch"]

    for scenario in result.scenarios:
        assert len(scenario.arms) == 2
        for arm in scenario.arms:
            assert arm.problems == [], (scenario.name, arm.arm.label, arm.problems)
            assert arm.items > 0
            assert arm.processing_left == 0
            assert arm.completed_in_db == arm.items + arm.warmup_items  # every claimed item got completed
            assert arm.claim_ms is not None and arm.report_ms is not None
            assert arm.claim_ms.p50 <= arm.claim_ms.p95 <= arm.claim_ms.p99 <= arm.claim_ms.max
        assert len(scenario.ratios) == 1 and scenario.ratios[0].value is not None
    workers = result.scenarios[0]
    assert [a.arm.workers for a in workers.arms] == [1, 2]
    assert [a.arm.batch for a in result.scenarios[1].arms] == [1, 10]

    # Every claim procedure's plans were captured, read the queue table, and passed: the plan
    # check is a correctness gate (a claim that scans its queue fails here, not only in a report).
    judged = {v.procedure: v for v in result.plans}
    assert {"dbo.Next_SyncQueue_trx", "dbo.Next_SyncQueue_Batch_trx", "dbo.Next_Notification_trx",
            "dbo.Next_Notification_Batch_trx"} <= set(judged)
    assert all(v.documents > 0 and v.reads for v in judged.values())
    assert {p: v.summary for p, v in judged.items() if not v.ok} == {}
    assert result.ok, result.failures()

    json_path, png_path = reports.write(result, tmp_path)
    shown = json.loads(json_path.read_text(encoding="utf-8"))
    assert shown["ok"] is True and shown["failures"] == []
    assert shown["server"]["version"]
    assert [a["workers"] for a in shown["scenarios"][0]["arms"]] == [1, 2]
    assert png_path.read_bytes().startswith(b"\x89PNG")
    assert "bench " in reports.render(result)

"""The cost scenarios against a real SQL Server, small: claimcost and healthcost at 1,000
against 20,000 items, idle for a few seconds. They check that every measure has its
figures from the server's counters, that every bound was computed and held, and the
report's shape; the figures themselves are the run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from bench import cost, idle
from bench import report as reports
from bench.scenarios import Settings, run

pytestmark = [pytest.mark.mssql, pytest.mark.bench]

SMALL = Settings(seconds=2, workers=2, batch=10, small_backlog=1_000, large_backlog=20_000, idle_seconds=3)


def test_the_cost_scenarios_measure_from_the_server_and_hold_their_bounds(mssql, tmp_path: Path) -> None:
    result = run(mssql, SMALL, ["claimcost", "healthcost", "idle"], console=Console(stderr=True))
    assert result.problems == []
    assert [c.name for c in result.costs] == ["claimcost", "healthcost", "idle"]
    claimcost, healthcost, idle_ = result.costs

    for scenario in (claimcost, healthcost):
        arms = {m.arm for m in scenario.measures}
        assert len(arms) == 2 and len(scenario.measures) == 2 * len(scenario.bounds)
        for m in scenario.measures:
            assert m.problem == "" and m.calls == cost.COST_CALLS, (m.arm, m.what, m.problem)
            assert m.reads_per_call is not None and m.reads_per_call > 0  # every call read something
    assert [m.what for m in claimcost.measures[:3]] == [
        "dbo.Next_SyncQueue_Batch_trx @Type = 'CustomerSync'", "dbo.Next_SyncQueue_Batch_trx @Type = NULL",
        "dbo.Next_Notification_Batch_trx @Type = NULL"]
    # The exhausted items in the way were failed by the warm-up claims, once each.
    assert any("exhausted SyncQueue items failed by" in n for n in claimcost.notes)
    assert len(healthcost.measures) == 6

    assert idle_.problems == []
    calls, cpu = idle_.bounds
    assert calls.value is not None and cpu.value is not None
    assert calls.limit == pytest.approx(idle.call_bound(idle.IDLE_SLOTS))
    assert idle_.measures[0].calls > 0  # the shared poll did claim while idle

    for scenario in result.costs:
        assert scenario.failures() == [], (scenario.name, scenario.failures())
    assert result.ok, result.failures()

    json_path, _ = reports.write(result, tmp_path)
    shown = json.loads(json_path.read_text(encoding="utf-8"))
    assert [c["name"] for c in shown["costs"]] == ["claimcost", "healthcost", "idle"]
    assert all(b["ok"] for c in shown["costs"] for b in c["bounds"])
    assert "cost as the tables grow" in reports.render(result)

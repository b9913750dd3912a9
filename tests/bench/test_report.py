"""The report: its JSON shape, the terminal table, the PNG."""

from __future__ import annotations

import json
from pathlib import Path

from bench import plans
from bench.counters import SCOPE, Snapshot
from bench.report import Report, ScenarioResult, render, scaling_series, write
from bench.scenarios import client_warnings, purge_result
from bench.stats import latency, ratio
from bench.workers import Arm, ArmResult
from tests.bench import showplans as sp


def arm_result(label: str, workers: int, items: int, *, queue: str = "SyncQueue", seconds: float = 10.0,
               problems: list[str] | None = None) -> ArmResult:
    arm = Arm(label=label, queue=queue, workers=workers, seconds=seconds)
    relational = queue == "SyncQueue"
    return ArmResult(
        arm=arm, elapsed=seconds, items=items, claims=items, empty_claims=0,
        claim_ms=latency([0.001 * n for n in range(1, 101)]),
        report_ms=latency([0.002] * 10) if relational else None, deadlock_retries=0,
        counters=Snapshot(lock_waits=12, deadlocks=0), fed=items,
        processing_left=0 if relational else None, completed_in_db=items if relational else None,
        problems=problems or [])


def sample_report(*, problems: list[str] | None = None, scan: bool = False) -> Report:
    one, many = arm_result("1 worker", 1, 10_000), arm_result("8 workers", 8, 40_000, problems=problems)
    heap_one, heap_many = (arm_result("1 consumer", 1, 20_000, queue="HeapQueue"),
                           arm_result("8 consumers", 8, 0, queue="HeapQueue"))
    report = Report(started_at="2024-05-01T10:00:00+00:00", settings={"seconds": 10.0, "workers": 8},
                    client={"host": "laptop", "cpus": 8},
                    server={"version": "16.0.4135.4", "edition": "Developer Edition (64-bit)", "cpus": 4})
    report.scenarios = [
        ScenarioResult("workers", "Do workers skip each other's rows?", [one, many],
                       [ratio("items/s with 8 workers over 1", ("8 workers", many.items_per_s),
                              ("1 worker", one.items_per_s))]),
        ScenarioResult("queues", "How do the message queues scale?", [heap_one, heap_many],
                       [ratio("HeapQueue: receives/s with 8 consumers over 1", ("8 consumers", 0.0),
                              ("1 consumer", 0.0))]),
    ]
    report.plans = [plans.judge("dbo.Next_SyncQueue_trx", [sp.SCAN_PLAN if scan else sp.SEEK_PLAN],
                                ["dbo.SyncQueue"])]
    return report


def test_the_json_carries_every_arm_ratio_and_plan() -> None:
    shown = json.loads(json.dumps(sample_report().as_dict()))
    assert set(shown) == {"format", "started_at", "finished_at", "seconds", "server", "client", "settings",
                          "counters", "scenarios", "plans", "ok", "failures", "warnings"}
    assert shown["format"] == 1 and shown["ok"] is True and shown["failures"] == []
    assert shown["counters"] == SCOPE and SCOPE.startswith("server-wide")
    workers = shown["scenarios"][0]
    assert workers["name"] == "workers"
    assert [a["label"] for a in workers["arms"]] == ["1 worker", "8 workers"]
    many = workers["arms"][1]
    assert many["items_per_s"] == 4000.0 and many["workers"] == 8 and many["queue"] == "SyncQueue"
    assert many["claim_ms"]["p99"] == 99.01 and many["claim_ms"]["count"] == 100
    assert (many["lock_waits"], many["deadlocks"], many["processing_left"]) == (12, 0, 0)
    assert workers["ratios"] == [{"name": "items/s with 8 workers over 1", "numerator": "8 workers",
                                  "denominator": "1 worker", "value": 4.0, "note": ""}]
    heap = shown["scenarios"][1]
    assert heap["arms"][0]["report_ms"] is None
    assert heap["ratios"][0]["value"] is None and heap["ratios"][0]["note"] == "1 consumer is 0"
    assert shown["plans"][0]["ok"] is True and shown["plans"][0]["procedure"] == "dbo.Next_SyncQueue_trx"
    assert shown["warnings"] == []


def test_an_arm_whose_items_were_not_all_completed_fails_the_run() -> None:
    report = sample_report(problems=["3 item(s) left in Processing"])
    assert not report.ok
    assert report.failures() == ["workers, 8 workers: 3 item(s) left in Processing"]


def test_a_scan_fails_the_run_naming_the_procedure() -> None:
    report = sample_report(scan=True)
    assert not report.ok
    assert report.failures() == ["dbo.Next_SyncQueue_trx: SCAN: Clustered Index Scan of PK_SyncQueue read "
                                 "100000 rows"]


def test_a_scenario_that_could_not_run_fails_the_run() -> None:
    report = sample_report()
    report.problems.append("purge: cannot reach SQL Server")
    assert report.as_dict()["failures"] == ["purge: cannot reach SQL Server"]


def test_the_terminal_table_shows_arms_ratios_plans_and_the_verdict() -> None:
    text = render(sample_report())
    lines = text.splitlines()
    many = next(line for line in lines if "8 workers" in line and "SyncQueue" in line)
    assert "4,000" in many and "99.01" in many and "ok" in many
    header = next(line for line in lines if "claim p50" in line)
    assert all(f"{call} {p}" in header for call in ("claim", "report") for p in ("p50", "p95", "p99"))
    assert any("items/s with 8 workers over 1" in line and "4.00x" in line for line in lines)
    assert any("HeapQueue: receives/s" in line and "n/a (1 consumer is 0)" in line for line in lines)
    assert any("dbo.Next_SyncQueue_trx" in line and "ok" in line and "2 seeks" in line for line in lines)
    assert "server-wide" in text
    assert "server 16.0.4135.4 (Developer Edition (64-bit), 4 CPUs)" in text
    assert lines[-1].strip() == "bench ok"


def test_the_terminal_table_says_why_a_run_failed() -> None:
    text = render(sample_report(scan=True))
    assert "FAIL" in text
    assert text.splitlines()[-1].startswith("bench FAILED: dbo.Next_SyncQueue_trx: SCAN")


def test_the_scaling_series_are_throughput_against_workers_per_queue() -> None:
    assert scaling_series(sample_report()) == {
        "SyncQueue (claim + complete)": [(1, 1000.0), (8, 4000.0)],
        "HeapQueue (receive)": [(1, 2000.0), (8, 0.0)],
    }


def test_write_puts_the_json_and_a_png_chart_in_the_folder(tmp_path: Path) -> None:
    report = sample_report()
    json_path, png_path = write(report, tmp_path / "reports" / "bench")
    assert json.loads(json_path.read_text(encoding="utf-8")) == json.loads(json.dumps(report.as_dict()))
    data = png_path.read_bytes()
    assert png_path.name == "throughput.png"
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5_000


def test_a_run_without_scaling_arms_still_gets_a_chart(tmp_path: Path) -> None:
    report = sample_report()
    report.scenarios = []
    _, png_path = write(report, tmp_path)
    assert png_path.read_bytes().startswith(b"\x89PNG")


def test_a_verdict_passed_on_a_bounded_scan_is_not_called_a_seek() -> None:
    report = sample_report()
    report.plans = [plans.judge("dbo.Next_SyncQueue_trx", [sp.ordered_scan_plan(116)], ["dbo.SyncQueue"])]
    line = next(line for line in render(report).splitlines() if "dbo.Next_SyncQueue_trx" in line)
    assert "ok" in line and "1 bounded scan" in line and "seek" not in line


def test_a_client_short_of_cpus_is_warned_about_in_the_table_and_the_json() -> None:
    assert client_warnings(8, 16) == [] and client_warnings(8, 9) == [] and client_warnings(8, None) == []
    report = sample_report()
    report.warnings += client_warnings(8, 4)
    assert report.ok  # a warning does not fail the run
    assert report.as_dict()["warnings"] == [
        "the client has 4 CPUs for 8 worker processes and the feeder: the figures with 8 workers, and their "
        "ratios, may be bound by the client, not the server"]
    assert "warning: the client has 4 CPUs for 8 worker processes" in render(report, width=400)


def purge_arms(ran_dry_s: float | None) -> ScenarioResult:
    quiet = arm_result("without a purge", 8, 40_000)
    purging = arm_result("while a purge runs", 8, 36_000)
    purging.purged, purging.purge_ran_dry_s = 120_000, ran_dry_s
    return purge_result(quiet, purging)


def test_a_purge_that_ran_dry_early_is_noted_on_its_ratios_in_the_table_too() -> None:
    scenario = purge_arms(3.2)
    note = "the purge ran dry after 3.2 s of 10 s (raise --purge-items)"
    assert [(r.value, r.note) for r in scenario.ratios] == [(1.0, note), (0.9, note)]
    report = sample_report()
    report.scenarios = [scenario]
    assert any("0.90x (" + note + ")" in line for line in render(report, width=400).splitlines())


def test_a_purge_that_lasted_the_arm_has_no_note() -> None:
    assert [r.note for r in purge_arms(None).ratios] == ["", ""]
    assert [r.note for r in purge_arms(10.3).ratios] == ["", ""]  # dry only after the arm's 10 s

"""The cost scenarios' arithmetic and bounds (bench.cost, bench.idle) against counter
snapshots recorded as the DMVs return them: sys.dm_exec_sessions rows for logical reads
and CPU, sys.dm_exec_procedure_stats rows for executions, including counters that were
reset or evicted between two reads."""

from __future__ import annotations

from datetime import datetime

import pytest

from bench import cost, idle
from bench import report as reports
from relq.worker.idle import IDLE_CLAIMS_PER_S

LOGIN = datetime(2026, 11, 28, 7, 0, 0)
LATER = datetime(2026, 11, 28, 7, 5, 0)


def session(reads: int, cpu: int, login: datetime | None = LOGIN, sid: int = 57) -> cost.SessionCounters:
    row = None if login is None else {"login_time": login, "logical_reads": reads, "cpu_time": cpu}
    return cost.SessionCounters.from_row(sid, row)


# -- one session's counters --------------------------------------------------------------------------


def test_what_a_session_spent_is_the_difference_of_its_counters() -> None:
    assert cost.spent(session(1_000, 40), session(4_350, 52)) == cost.Spent(3_350, 12)


@pytest.mark.parametrize("after, why", [
    (session(900, 52), "went down"),  # logical reads reset
    (session(4_350, 3), "went down"),  # CPU reset
    (session(4_350, 52, login=LATER), "logged in again"),
    (session(0, 0, login=None), "was not found"),
    (session(4_350, 52, sid=58), "compared with session 58"),
])
def test_a_reset_or_vanished_session_is_unreliable_not_a_difference(after: cost.SessionCounters,
                                                                     why: str) -> None:
    with pytest.raises(cost.Unreliable, match=why):
        cost.spent(session(1_000, 40), after)


def test_a_measure_is_the_mean_over_its_calls() -> None:
    m = cost.measured("1,000 in the way", "claim", 50, session(1_000, 40), session(6_000, 90))
    assert (m.logical_reads, m.cpu_ms, m.problem) == (5_000, 50, "")
    assert m.reads_per_call == 100.0 and m.cpu_ms_per_call == 1.0


def test_a_measure_over_a_reset_counter_has_no_figures_and_says_why() -> None:
    m = cost.measured("arm", "claim", 50, session(6_000, 90), session(10, 1))
    assert m.reads_per_call is None and m.cpu_ms_per_call is None
    assert "went down" in m.problem
    result = cost.CostResult("claimcost", "?", measures=[m])
    assert result.failures() == [f"arm, claim: {m.problem}"]


def test_a_measure_of_no_call_is_not_a_figure() -> None:
    assert cost.measured("arm", "claim", 0, session(1, 1), session(1, 1)).problem == "no call was measured"


class FakeMeter:
    """Counters that each call adds 120 reads and 2 ms to, a compilation 5,000 more."""

    def __init__(self) -> None:
        self.reads, self.cpu, self.compiled = 0, 0, False

    def call(self) -> int:
        self.reads += 120 if self.compiled else 5_120
        self.cpu += 2
        self.compiled = True
        return self.reads

    def read(self) -> cost.SessionCounters:
        return session(self.reads, self.cpu)


def test_measure_leaves_the_warm_calls_and_their_compilation_out() -> None:
    meter = FakeMeter()
    seen: list[int] = []
    m = cost.measure(meter, "arm", "claim", meter.call, seen.append, calls=10, warm=3)  # type: ignore[arg-type]
    assert len(seen) == 13  # every call's result went to ``between``, warm ones included
    assert m.calls == 10 and m.reads_per_call == 120.0 and m.cpu_ms_per_call == 2.0


# -- the bounds ----------------------------------------------------------------------------------------


def arm(reads_per_call: float, label: str, calls: int = 50) -> cost.Measure:
    return cost.Measure(label, "claim", calls, round(reads_per_call * calls), 10)


@pytest.mark.parametrize("large, ok", [(150.0, True), (100.0, True), (151.0, False), (1_000.0, False)])
def test_claim_reads_pass_up_to_one_and_a_half_times_and_not_beyond(large: float, ok: bool) -> None:
    bound = cost.ratio_bound("reads", arm(large, "1,000,000 in the way"), arm(100.0, "1,000 in the way"),
                             cost.CLAIM_BOUND)
    assert bound.value == pytest.approx(large / 100.0)
    assert bound.ok is ok
    assert (bound.problem() is None) is ok
    assert bound.note == "1,000,000 in the way over 1,000 in the way"


def test_a_failing_bound_says_its_value_and_its_limit() -> None:
    bound = cost.ratio_bound("reads per call of q", arm(240.0, "large"), arm(100.0, "small"),
                             cost.HEALTH_BOUND)
    assert bound.problem() == "reads per call of q: 2.40x, over the bound of 1.5x"
    result = cost.CostResult("healthcost", "?", bounds=[bound])
    assert result.failures() == ["reads per call of q: 2.40x, over the bound of 1.5x"]
    assert result.as_dict()["ok"] is False


def test_a_bound_with_an_arm_that_measured_nothing_fails_naming_why() -> None:
    broken = cost.measured("large", "claim", 50, session(6_000, 90), session(5, 1))
    bound = cost.ratio_bound("reads", broken, arm(100.0, "small"), cost.CLAIM_BOUND)
    assert bound.value is None and not bound.ok
    assert "went down" in bound.note
    assert bound.problem().startswith("reads: not measured (session 57's counters went down")


def test_a_small_arm_of_zero_reads_gives_no_ratio_and_fails() -> None:
    bound = cost.ratio_bound("reads", arm(10.0, "large"), arm(0.0, "small"), cost.CLAIM_BOUND)
    assert bound.value is None and bound.note == "small is 0"
    assert not bound.ok


def test_the_warm_up_may_take_twice_the_claims_the_exhausted_items_need() -> None:
    assert cost.warmup_limit(0, 116) == cost.WARM_CALLS + 10
    assert cost.warmup_limit(100_000, 116) == 2 * 863 + cost.WARM_CALLS + 10
    assert cost.warmup_limit(116, 116) == 2 + cost.WARM_CALLS + 10


def test_the_loader_in_the_way_reads_the_queues_own_attempt_limit_and_columns() -> None:
    sync = cost.in_the_way_sql("SyncQueue")
    assert "dbo.AppSettingInt_fn('syncqueue.maxAttempts')" in sync and "EntityKey" in sync
    assert "INSERT INTO dbo.SyncQueue (" in sync and "N'dbo.SyncQueue'" in sync
    notification = cost.in_the_way_sql("Notification")
    assert "'notification.maxAttempts'" in notification and "EntityKey" not in notification
    with pytest.raises(ValueError):
        cost.in_the_way_sql("Sync; DROP TABLE x")


# -- idle: procedure executions and the worker's sessions ----------------------------------------------

CACHED = datetime(2026, 11, 28, 6, 0, 0)


def stat(name: str, count: int, cached: datetime = CACHED) -> idle.ProcedureStat:
    return idle.ProcedureStat.from_row({"name": name, "cached_time": cached, "execution_count": count,
                                        "total_worker_time": count * 300})


def test_executions_are_the_deltas_of_each_cached_plan() -> None:
    before = {b"\x01": stat("Next_SyncQueue_Batch_trx", 16), b"\x02": stat("Next_SyncQueue_utx", 16)}
    after = {b"\x01": stat("Next_SyncQueue_Batch_trx", 646), b"\x02": stat("Next_SyncQueue_utx", 646),
             b"\x03": stat("Extend_SyncQueue_trx", 4)}  # cached after the first read: counted whole
    assert idle.executions(before, after) == {"Next_SyncQueue_Batch_trx": 630, "Next_SyncQueue_utx": 630,
                                              "Extend_SyncQueue_trx": 4}


def test_two_plans_of_one_procedure_add_up() -> None:
    before = {b"\x01": stat("Next_SyncQueue_Batch_trx", 10), b"\x02": stat("Next_SyncQueue_Batch_trx", 5)}
    after = {b"\x01": stat("Next_SyncQueue_Batch_trx", 20), b"\x02": stat("Next_SyncQueue_Batch_trx", 8)}
    assert idle.executions(before, after) == {"Next_SyncQueue_Batch_trx": 13}


@pytest.mark.parametrize("after, why", [
    ({}, "left the plan cache"),  # evicted
    ({b"\x01": stat("Next_SyncQueue_Batch_trx", 700, cached=LATER)}, "were reset"),  # recompiled
    ({b"\x01": stat("Next_SyncQueue_Batch_trx", 3)}, "were reset"),  # counter went down
])
def test_an_evicted_or_reset_plan_makes_the_count_unreliable(after: dict, why: str) -> None:
    with pytest.raises(cost.Unreliable, match=why):
        idle.executions({b"\x01": stat("Next_SyncQueue_Batch_trx", 16)}, after)


def test_the_workers_cpu_is_the_sum_over_its_sessions_and_a_lost_one_is_unreliable() -> None:
    before = {51: session(0, 100, sid=51), 52: session(0, 7, sid=52)}
    assert idle.cpu_ms(before, {51: session(0, 130, sid=51), 52: session(0, 9, sid=52)}) == 32
    with pytest.raises(cost.Unreliable, match="session 52 was not found"):
        idle.cpu_ms(before, {51: session(0, 130, sid=51)})
    with pytest.raises(cost.Unreliable, match="logged in again"):
        idle.cpu_ms(before, {51: session(0, 130, sid=51), 52: session(0, 1, login=LATER, sid=52)})


def test_the_idle_bounds_follow_the_workers_stated_bound() -> None:
    assert idle.call_bound(16) == pytest.approx(IDLE_CLAIMS_PER_S / 16 * 1.1)
    assert idle.cpu_bound(16) == pytest.approx(idle.call_bound(16) * idle.CLAIM_CPU_MS)


def figures(claims: int, cpu: int, seconds: float = 60.0, sessions: int = 16) -> idle.IdleFigures:
    return idle.IdleFigures(slots=16, seconds=seconds, claims=claims, executions=2 * claims, cpu_ms=cpu,
                            sessions=sessions)


def test_an_idle_worker_at_its_poll_rate_passes() -> None:
    result = idle.idle_result(figures(claims=600, cpu=900))  # 10 claims a second, 1.5 ms each
    assert [b.value for b in result.bounds] == [pytest.approx(600 / 960), pytest.approx(900 / 960)]
    assert result.failures() == []
    assert "1,200 procedure executions in all" in result.notes[0]


def test_a_worker_that_polls_in_every_slot_fails_the_statements_bound() -> None:
    """What the long-poll did: 10 claims a second in each of the 16 slots."""
    result = idle.idle_result(figures(claims=16 * 600, cpu=900))
    assert [b.ok for b in result.bounds] == [False, True]
    assert result.failures()[0].startswith(
        "statements (claim calls) per idle slot-second: 10.000 calls, over")


def test_claims_that_cost_too_much_cpu_fail_the_cpu_bound() -> None:
    result = idle.idle_result(figures(claims=600, cpu=600 * 6))  # 6 ms a claim
    assert [b.ok for b in result.bounds] == [True, False]


def test_missing_sessions_and_an_empty_window_fail() -> None:
    result = idle.idle_result(figures(claims=600, cpu=900, sessions=15))
    assert "15 sessions of the worker found, not 16" in result.failures()[0]
    empty = idle.idle_result(figures(claims=0, cpu=0, seconds=0.0))
    assert [b.value for b in empty.bounds] == [None, None]
    assert all("not measured (no time between the two reads)" in f for f in empty.failures())


def test_the_app_name_replaces_any_the_connection_string_had() -> None:
    conn = idle.with_app("DRIVER={ODBC Driver 18 for SQL Server};SERVER=x;APP=mine;UID=u")
    assert conn.endswith(";APP=relq-bench-idle") and "mine" not in conn


# -- the report --------------------------------------------------------------------------------------


def test_the_report_shows_the_costs_and_fails_on_a_bound() -> None:
    report = reports.Report(started_at="2026-11-28T07:00:00+00:00", settings={},
                            client={"host": "h", "cpus": 4})
    assert "costs" not in report.as_dict()
    good = cost.CostResult("claimcost", "?", measures=[arm(100.0, "small"), arm(110.0, "large")],
                           bounds=[cost.ratio_bound("reads", arm(110.0, "large"), arm(100.0, "small"), 1.5)])
    report.costs.append(good)
    assert report.ok
    text = reports.render(report)
    assert "cost as the tables grow" in text and "1.10x (at most 1.5)" in text
    report.costs.append(idle.idle_result(figures(claims=16 * 600, cpu=900)))
    assert not report.ok
    assert report.failures()[0].startswith("idle: statements (claim calls) per idle slot-second")
    shown = report.as_dict()["costs"]
    assert [c["name"] for c in shown] == ["claimcost", "idle"] and shown[1]["ok"] is False

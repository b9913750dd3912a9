"""The load scenarios' arithmetic and checks (bench.load, bench.producers), offline, against
recorded counter snapshots: PAGELATCH_% wait deltas, lock promotions per index, the
clients' loop and its counted errors, what an arm must account for, and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import load, producers
from bench import report as reports
from bench.cli import parser
from bench.load import LoadArm, LoadResult, PromotionDelta, Role, Run, WaitDelta
from bench.scenarios import Settings
from relq import db

# sys.dm_os_wait_stats rows (PAGELATCH_ only) before and after an arm, as read on a server.
WAITS_BEFORE = {"PAGELATCH_EX": (120_400, 88_210), "PAGELATCH_SH": (40_002, 9_120), "PAGELATCH_UP": (310, 95)}
WAITS_AFTER = {
    "PAGELATCH_EX": (131_950, 97_400),
    "PAGELATCH_SH": (40_002, 9_120),
    "PAGELATCH_UP": (318, 99),
    "PAGELATCH_KP": (2, 0),
}
# sys.dm_db_index_operational_stats: (table, index_id) -> index_lock_promotion_count.
PROMOTIONS_BEFORE = {
    ("SyncQueue", 1): 3,
    ("SyncQueue", 2): 0,
    ("SyncQueueAttempt", 1): 0,
    ("FifoQueue", 1): 7,
}
TABLES = ("SyncQueue", "SyncQueueAttempt")


def _error(number: int) -> db.SqlError:
    return db.SqlError([db.ServerMessage(number, "refused", "40001")])


# -- PAGELATCH_% waits --------------------------------------------------------------------------------


def test_pagelatch_waits_are_the_difference_per_wait_type() -> None:
    delta = load.wait_delta(WAITS_BEFORE, WAITS_AFTER)
    assert delta.problem == ""
    assert delta.by_type == {"PAGELATCH_EX": (11_550, 9_190), "PAGELATCH_UP": (8, 4), "PAGELATCH_KP": (2, 0)}
    assert (delta.tasks, delta.ms) == (11_560, 9_194)
    assert delta.shown() == "11,560 (9,194 ms)"


def test_pagelatch_waits_cleared_during_the_arm_are_not_known() -> None:
    cleared = {**WAITS_AFTER, "PAGELATCH_SH": (12, 3)}  # DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)
    delta = load.wait_delta(WAITS_BEFORE, cleared)
    assert delta.tasks is None and delta.ms is None
    assert "PAGELATCH_SH went down" in delta.problem
    assert delta.shown().startswith("n/a (")


def test_pagelatch_waits_not_readable_say_what_is_missing() -> None:
    assert "VIEW SERVER STATE" in load.wait_delta(None, WAITS_AFTER).problem
    assert load.wait_delta(WAITS_BEFORE, None).tasks is None


# -- lock promotions ------------------------------------------------------------------------------------


def test_no_promotion_during_the_arm_passes() -> None:
    after = {**PROMOTIONS_BEFORE, ("FifoQueue", 1): 9}  # another table's: not the arm's
    delta = load.promotion_delta(PROMOTIONS_BEFORE, after, TABLES)
    assert delta.by_table == {"SyncQueue": 0, "SyncQueueAttempt": 0}
    assert delta.total == 0 and delta.failure() is None


def test_a_promotion_on_a_queue_table_fails_the_arm_naming_it() -> None:
    after = {**PROMOTIONS_BEFORE, ("SyncQueue", 2): 1, ("SyncQueueAttempt", 1): 2}
    delta = load.promotion_delta(PROMOTIONS_BEFORE, after, TABLES)
    assert delta.by_table == {"SyncQueue": 1, "SyncQueueAttempt": 2}
    assert delta.failure() == (
        "lock promotions (escalations to a table lock): 1 on dbo.SyncQueue, 2 on dbo.SyncQueueAttempt"
    )


def test_an_index_that_entered_the_cache_counts_from_zero() -> None:
    after = {**PROMOTIONS_BEFORE, ("SyncQueue", 3): 1}
    assert load.promotion_delta(PROMOTIONS_BEFORE, after, TABLES).by_table["SyncQueue"] == 1


@pytest.mark.parametrize(
    "after",
    [
        {**PROMOTIONS_BEFORE, ("SyncQueue", 1): 0},  # went down: reset when it re-entered the cache
        {k: v for k, v in PROMOTIONS_BEFORE.items() if k != ("SyncQueue", 2)},  # left the cache
    ],
)
def test_reset_counters_fail_the_arm_as_not_measured(after: dict) -> None:
    delta = load.promotion_delta(PROMOTIONS_BEFORE, after, TABLES)
    assert delta.total is None
    assert delta.failure() is not None and delta.failure().startswith("lock promotions not measured")


def test_a_reset_hidden_by_another_index_growing_is_still_caught() -> None:
    # Summed per table, index 1 going 3 -> 0 and index 2 going 0 -> 5 would look like +2.
    after = {**PROMOTIONS_BEFORE, ("SyncQueue", 1): 0, ("SyncQueue", 2): 5}
    assert load.promotion_delta(PROMOTIONS_BEFORE, after, TABLES).total is None


def test_unreadable_promotions_fail_as_not_measured() -> None:
    delta = load.promotion_delta(None, PROMOTIONS_BEFORE, TABLES)
    assert "VIEW DATABASE STATE" in (delta.failure() or "")


# -- the clients' loop ----------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Scripted:
    """An action whose steps move the items (or raise the errors) of ``script``, one a step,
    each step taking a second of the fake clock."""

    def __init__(self, script: list[Any], clock: _Clock) -> None:
        self.script, self.clock = list(script), clock
        self.ledger: list[Any] = []

    def step(self, retry: Any) -> int:
        self.clock.now += 1.0
        what = self.script.pop(0)
        if isinstance(what, Exception):
            raise what
        return what


def test_the_loop_counts_items_empty_calls_and_the_counted_errors() -> None:
    clock = _Clock()
    action = _Scripted([1, 0, _error(1205), 3, _error(1222), 0, 2], clock)
    tally = load.Tally()
    took = load.run_steps(action, 7.0, tally, clock=clock, pause=lambda s: None)
    assert took == 7.0
    assert (tally.items, tally.calls, tally.empty) == (6, 5, 2)
    assert tally.errors == {1205: 1, 1222: 1}


def test_the_loop_stops_on_any_other_error() -> None:
    clock = _Clock()
    with pytest.raises(db.SqlError):
        load.run_steps(
            _Scripted([1, _error(547)], clock), 5.0, load.Tally(), clock=clock, pause=lambda s: None
        )


def test_a_retried_call_repeats_after_a_deadlock_and_counts_it() -> None:
    tally = load.Tally()
    retry = load.retrying(tally)
    outcomes: list[Any] = [_error(1205), _error(1205), "done"]

    def call() -> str:
        what = outcomes.pop(0)
        if isinstance(what, Exception):
            raise what
        return what

    assert retry(call) == "done" and tally.errors == {1205: 2}
    always = load.Tally()
    with pytest.raises(db.SqlError):
        load.retrying(always)(lambda: (_ for _ in ()).throw(_error(1205)))
    assert always.errors == {1205: load.RETRIES - 1}


# -- what a producers arm accounts for ------------------------------------------------------------------


def test_a_syncqueue_arm_that_adds_up_passes() -> None:
    assert producers.accounted("SyncQueue", 5_000, 4_200, (5_000, 4_200, 0)) == []


def test_a_syncqueue_arm_that_does_not_add_up_names_each_gap() -> None:
    problems = producers.accounted("SyncQueue", 5_000, 4_200, (4_999, 4_201, 2))
    assert problems == [
        "the producers enqueued 5,000 items, dbo.SyncQueue holds 4,999",
        "the consumers completed 4,200 items, dbo.SyncQueue shows 4,201 Completed",
        "2 item(s) left Processing",
    ]


def test_a_message_queue_must_hold_what_was_sent_and_not_received() -> None:
    assert producers.accounted("FifoQueue", 900, 850, (50,)) == []
    lost = producers.accounted("FifoQueue", 900, 850, (49,))
    assert lost and "holds 49 (not 50)" in lost[0]
    assert producers.accounted("TransportMessage", 900, 850, (51,))  # one received twice, or sent twice


def _out(
    role: str,
    items: int,
    elapsed: float,
    warmup: int = 0,
    empty: int = 0,
    errors: dict[int, int] | None = None,
) -> dict[str, Any]:
    return {
        "role": role,
        "slot": 0,
        "elapsed": elapsed,
        "items": items,
        "calls": items + empty,
        "empty": empty,
        "errors": {1205: 0, 1222: 0, **(errors or {})},
        "warmup_items": warmup,
        "ledger": [],
    }


def _run(outs: list[dict[str, Any]], promotions: PromotionDelta | None = None) -> Run:
    return Run(outs, WaitDelta({"PAGELATCH_EX": (40, 12)}), promotions or PromotionDelta({"FifoQueue": 0}))


FIFO = producers.KINDS[1]


def test_a_producers_arm_rates_over_the_slowest_client_and_checks_the_table() -> None:
    run = _run(
        [
            _out("producer", 600, 10.0, warmup=60),
            _out("producer", 400, 8.0, warmup=40),
            _out("consumer", 900, 10.0, warmup=80, empty=5),
        ]
    )
    arm = producers.arm_of(
        FIFO, "FifoQueue, 2 producers, 1 consumer", run, (1_100 - 980,), {"producers": 2, "consumers": 1}
    )
    assert arm.counts == {"produced": 1_000, "consumed": 900, "empty receives": 5}
    assert arm.rates == {"produced": 100.0, "consumed": 90.0}
    assert arm.failures() == []
    short = producers.arm_of(FIFO, "a", run, (119,), {"producers": 2, "consumers": 1})
    assert short.failures() and "holds 119 (not 120)" in short.failures()[0]


def test_a_producers_arm_fails_on_a_promotion_and_on_measuring_nothing() -> None:
    run = _run([_out("producer", 10, 1.0), _out("consumer", 0, 1.0)], PromotionDelta({"FifoQueue": 1}))
    arm = producers.arm_of(FIFO, "a", run, (10,), {"producers": 1, "consumers": 1})
    assert any("nothing was consumed" in p for p in arm.failures())
    assert any("1 on dbo.FifoQueue" in p for p in arm.failures())


def test_the_ratios_are_each_consumer_count_over_the_first() -> None:
    def arm(consumers: int, consumed: float, produced: float) -> LoadArm:
        return LoadArm(
            f"{consumers} consumers",
            "FifoQueue",
            {"producers": 8, "consumers": consumers},
            10.0,
            {},
            {"consumed": consumed, "produced": produced},
            {},
            WaitDelta({}),
            PromotionDelta({}),
        )

    ratios = producers.consumer_ratios(
        FIFO, [arm(1, 500.0, 4_000.0), arm(8, 3_000.0, 3_600.0), arm(32, 3_500.0, 3_500.0)]
    )
    assert [(r.name, round(r.value or 0, 3)) for r in ratios] == [
        ("FifoQueue: consumed/s with 8 consumers over 1", 6.0),
        ("FifoQueue: produced/s with 8 consumers over 1", 0.9),
        ("FifoQueue: consumed/s with 32 consumers over 1", 7.0),
        ("FifoQueue: produced/s with 32 consumers over 1", 0.875),
    ]


def test_the_roles_of_each_queue_call_its_own_procedures() -> None:
    sync, fifo, transport = producers.KINDS
    assert [(r.name, r.factory, r.count) for r in sync.roles(8, 32, None)] == [
        ("producer", "bench.producers:add_sync", 8),
        ("consumer", "bench.producers:take_sync", 32),
    ]
    send, receive = transport.roles(8, 1, "relq-bench@host")
    assert send.param("procedure") == "dbo.Send_TransportMessage_trx"
    assert dict(receive.param("args")) == {"Queue": "relq-bench@host", "BatchSize": 1}
    assert fifo.roles(8, 1, None)[1].param("procedure") == "dbo.Receive_FifoQueue_trx"


# -- options and the report ----------------------------------------------------------------------------


def test_consumers_and_producers_are_options_checked_before_any_run() -> None:
    args = parser().parse_args(["--consumers", "1, 4", "--producers", "2"])
    assert args.consumers == (1, 4) and args.producers == 2
    assert Settings().consumers == (1, 8, 32) and Settings().producers == 8
    problems = Settings(producers=0, consumers=(0, 8)).problems()
    assert "--producers must be at least 1, not 0" in problems
    assert "--consumers must be counts of at least 1, not 0,8" in problems
    with pytest.raises(ValueError):
        producers.counts("1,x")


def test_a_client_with_fewer_cpus_than_processes_is_noted() -> None:
    assert load.client_note(40, 16) and load.client_note(4, 16) == []


def test_the_report_shows_the_loads_and_fails_on_them(tmp_path: Path) -> None:
    arm = LoadArm(
        "SyncQueue, 8 producers, 1 consumer",
        "SyncQueue",
        {"producers": 8, "consumers": 1},
        10.0,
        {"produced": 10_000, "consumed": 2_000},
        {"produced": 1_000.0, "consumed": 200.0},
        {1205: 2, 1222: 0},
        WaitDelta({"PAGELATCH_EX": (40, 12)}),
        PromotionDelta({"SyncQueue": 1}),
    )
    result = reports.Report(
        started_at="2026-01-01T00:00:00+00:00",
        settings={},
        client={"host": "h", "cpus": 4},
        loads=[LoadResult("producers", "?", [arm])],
    )
    assert not result.ok
    assert result.failures() == [
        "producers: SyncQueue, 8 producers, 1 consumer: lock promotions (escalations to "
        "a table lock): 1 on dbo.SyncQueue"
    ]
    text = reports.render(result, width=300)
    assert "producers, consumers and the transport purge" in text and "40 (12 ms)" in text and "2/0" in text
    json_path, _ = reports.write(result, tmp_path)
    shown = json.loads(json_path.read_text(encoding="utf-8"))
    (load_,) = shown["loads"]
    assert load_["arms"][0]["lock_promotions"] == {"total": 1, "by_table": {"SyncQueue": 1}, "problem": ""}
    assert load_["arms"][0]["pagelatch_waits"]["waiting_tasks"] == 40 and load_["ok"] is False


def test_a_role_builds_its_action_by_name_in_the_client() -> None:
    from bench import transport

    conn = object()
    action = load.build(Role("purge", "bench.transport:purger", 1, (("queue", "q"),)), conn, 0)
    assert isinstance(action, transport.Purger) and action.conn is conn and action.ledger == []

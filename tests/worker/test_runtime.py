"""The worker runtime against an in-memory queue that keeps the procedures'
contract: dispatch, error classification, step resume, leases, shutdown."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from relq import db
from relq.worker import runtime
from relq.worker.handlers import MAX_SNOOZE_S, Cancel, Handlers, Item, NextStep, Permanent, Snooze
from relq.worker.procedures import Claim
from relq.worker.runtime import Held, IdleBackoff, Report, Settings, Worker
from relq.worker.stats import Stats
from tests.worker.memory_queue import MemoryQueue, deadlock, link_failure

TIMEOUT_S = 20


def start(queue: MemoryQueue, handlers: Handlers, **settings) -> tuple[Worker, threading.Thread, list]:
    options = {"concurrency": 2, "grace_s": 5.0} | settings  # the default: the shared idle poll
    worker = Worker(Settings(queue.queue, "test", **options), handlers, queue.procedures)
    result: list[Stats] = []
    thread = threading.Thread(target=lambda: result.append(worker.run()), daemon=True)
    thread.start()
    return worker, thread, result


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def drain(queue: MemoryQueue, handlers: Handlers, **settings) -> dict:
    worker, thread, result = start(queue, handlers, **settings)
    until(queue.settled)
    worker.stop()
    thread.join(TIMEOUT_S)
    assert not thread.is_alive()
    return result[0].summary()


def test_each_item_goes_to_the_handler_of_its_type_and_completes() -> None:
    queue, handlers, seen = MemoryQueue(), Handlers(), []
    handlers.register("Notification", "ResetPassword")(lambda item: seen.append(("reset", item.key)) or "ok")
    handlers.register("Notification", "Welcome")(lambda item: seen.append(("welcome", item.key)) or None)
    resets = [queue.add("ResetPassword") for _ in range(10)]
    welcomes = [queue.add("Welcome") for _ in range(10)]

    summary = drain(queue, handlers, concurrency=3, batch_size=4)

    assert sorted(seen) == sorted([("reset", k) for k in resets] + [("welcome", k) for k in welcomes])
    assert set(queue.statuses().values()) == {"Completed"}
    assert (summary["claimed"], summary["completed"], summary["retried"]) == (20, 20, 0)
    assert queue.rows[resets[0]].fields["Response"] == "ok"


def test_an_exception_is_an_error_retried_and_a_permanent_one_fails_at_once() -> None:
    queue, handlers, calls = MemoryQueue(max_attempts=3), Handlers(), []

    @handlers.register("Notification", "ResetPassword")
    def flaky(item: Item) -> str:
        calls.append(item.attempt)
        if item.attempt == 1:
            raise ConnectionError("smtp down")
        return "sent"

    @handlers.register("Notification", "Broken")
    def broken(item: Item) -> str:
        raise Permanent("no such address")

    flaky_key, broken_key = queue.add("ResetPassword"), queue.add("Broken")
    summary = drain(queue, handlers, concurrency=1)

    assert calls == [1, 2]
    assert queue.rows[flaky_key].history == ["Processing", "Error", "Processing", "Completed"]
    assert queue.rows[broken_key].history == ["Processing", "Failed"]
    assert queue.rows[broken_key].fields["Error"] == "Permanent: no such address"
    assert (summary["retried"], summary["failed"], summary["completed"]) == (1, 1, 1)


def test_an_item_whose_attempts_are_spent_is_failed_by_the_database() -> None:
    queue, handlers = MemoryQueue(max_attempts=2), Handlers()
    handlers.register("Notification", "ResetPassword")(lambda item: 1 / 0)
    key = queue.add()
    summary = drain(queue, handlers)
    assert queue.rows[key].history == ["Processing", "Error", "Processing", "Failed"]
    assert "ZeroDivisionError" in queue.rows[key].fields["Error"]
    assert (summary["retried"], summary["failed"]) == (1, 1)


def test_a_multi_step_job_resumes_at_its_recorded_step_after_a_retry() -> None:
    queue, handlers, calls = MemoryQueue(), Handlers(), []

    @handlers.register("Notification", "ResetPassword")
    def render(item: Item) -> NextStep:
        calls.append(("render", item.step))
        return NextStep("Send", response="rendered")

    @handlers.register("Notification", "ResetPassword", step="Send")
    def send(item: Item) -> str:
        calls.append(("send", item.step, item.attempt))
        if item.attempt == 1:
            raise TimeoutError("relay timed out")
        return "sent"

    key = queue.add()
    drain(queue, handlers, concurrency=1)
    assert calls == [("render", None), ("send", "Send", 1), ("send", "Send", 2)]
    assert queue.rows[key].history == ["Processing", "Processing", "Error", "Processing", "Completed"]


def test_an_item_without_a_handler_is_an_error_that_names_what_is_missing() -> None:
    queue, handlers = MemoryQueue(max_attempts=1), Handlers()
    key = queue.add("Unknown")
    drain(queue, handlers)
    assert queue.rows[key].status == "Failed"
    assert "no handler is registered for Notification Unknown step (first)" in queue.rows[key].fields["Error"]


@pytest.mark.parametrize("broken", [False, True], ids=["", "renewal-on-a-broken-connection"])
def test_a_long_handler_keeps_its_lease_and_no_other_slot_takes_the_item(quick_retries, broken: bool) -> None:
    queue, handlers, runs = MemoryQueue(lease_s=1.0), Handlers(), []

    @handlers.register("Notification", "ResetPassword")
    def slow(item: Item) -> str:
        runs.append(item.key)
        time.sleep(2.5)  # past the 1 s lease, twice over
        return "done"

    key = queue.add()
    if broken:  # the renewal is made again on a new connection
        queue.fail("extend", link_failure())
    drain(queue, handlers, concurrency=3)
    assert runs == [key]
    assert queue.extends >= 2
    assert queue.rows[key].history == ["Processing", "Completed"]


def test_items_waiting_their_turn_in_a_batch_keep_their_leases_too() -> None:
    queue, handlers, runs = MemoryQueue(lease_s=1.0), Handlers(), []

    @handlers.register("Notification", "ResetPassword")
    def slow(item: Item) -> str:
        runs.append(item.key)
        time.sleep(0.8)  # the batch takes 2.4 s: its last item waits past its 1 s lease
        return "done"

    keys = [queue.add() for _ in range(3)]
    worker, thread, _ = start(queue, handlers, concurrency=1, batch_size=3)
    until(lambda: len(runs) == 3)
    rival = queue.procedures().claim("rival/1", 3, 0)  # a second worker finds nothing abandoned
    until(queue.settled)
    worker.stop()
    thread.join(TIMEOUT_S)
    assert rival == []
    assert sorted(runs) == keys
    assert all(queue.rows[k].history == ["Processing", "Completed"] for k in keys)


def test_a_result_is_dropped_when_the_item_was_taken_over_while_the_handler_ran() -> None:
    queue, handlers = MemoryQueue(), Handlers()
    key = queue.add()

    @handlers.register("Notification", "ResetPassword")
    def overtaken(item: Item) -> str:
        queue.take_over(item.key, by="other/1")
        return "too late"

    worker, thread, result = start(queue, handlers, concurrency=1)
    until(lambda: result or worker.stats.summary()["lost"] == 1)
    worker.stop()
    thread.join(TIMEOUT_S)
    assert queue.rows[key].history == ["Processing"]  # no report of this attempt
    assert queue.rows[key].fields.get("Response") is None
    assert result[0].summary()["lost"] == 1


def in_hand(queue: MemoryQueue, items: int) -> tuple[list, Worker, threading.Thread, list, threading.Event]:
    """A worker of one slot that claimed ``items`` items in one batch and has the first in its
    handler, which returns once the event it returns is set: (keys, worker, thread, result, event)."""
    handlers, started, go_on = Handlers(), threading.Event(), threading.Event()

    @handlers.register("Notification", "ResetPassword")
    def held(item: Item) -> str:
        started.set()
        go_on.wait(TIMEOUT_S)
        return "done"

    keys = [queue.add() for _ in range(items)]
    worker, thread, result = start(queue, handlers, concurrency=1, batch_size=items)
    assert started.wait(TIMEOUT_S)
    return keys, worker, thread, result, go_on


def test_a_shutdown_finishes_the_item_in_hand_and_releases_the_rest_of_the_batch() -> None:
    queue = MemoryQueue()
    keys, worker, thread, result, go_on = in_hand(queue, 5)
    worker.stop()
    # the rest of the batch goes back at once, while the first item is still in hand
    until(lambda: [queue.statuses()[k] for k in keys[1:]] == ["Pending"] * 4)
    go_on.set()
    thread.join(TIMEOUT_S)

    statuses = queue.statuses()
    assert statuses[keys[0]] == "Completed"
    assert [statuses[k] for k in keys[1:]] == ["Pending"] * 4
    assert all(queue.rows[k].attempt == 0 for k in keys[1:])  # the attempts were given back
    assert result[0].summary()["released"] == 4


def test_a_handler_still_running_after_the_grace_period_is_released() -> None:
    queue, handlers = MemoryQueue(), Handlers()
    started, go_on = threading.Event(), threading.Event()

    @handlers.register("Notification", "ResetPassword")
    def stuck(item: Item) -> str:
        started.set()
        go_on.wait(TIMEOUT_S)
        return "done"

    key, *waiting = [queue.add() for _ in range(3)]
    worker, thread, result = start(queue, handlers, concurrency=1, batch_size=3, grace_s=0.2)
    assert started.wait(TIMEOUT_S)
    worker.stop()
    thread.join(TIMEOUT_S)
    assert not thread.is_alive()
    assert queue.rows[key].status == "Pending"  # another worker may take it at once
    assert [queue.rows[k].status for k in waiting] == ["Pending", "Pending"]
    assert result[0].summary()["released"] == 3
    go_on.set()  # the late handler's result is dropped: nothing is held any more
    until(lambda: result[0].summary()["lost"] == 1)
    assert queue.rows[key].status == "Pending"


@pytest.fixture
def quick_retries(monkeypatch) -> None:
    monkeypatch.setattr(runtime, "RETRY_WAITS", (0.0,) * len(runtime.RETRY_WAITS))


def counting(handlers: Handlers, runs: list) -> None:
    handlers.register("Notification", "ResetPassword")(lambda item: runs.append(item.key) or "done")


def test_a_report_whose_connection_broke_is_made_again_on_a_new_one(quick_retries) -> None:
    queue, handlers, runs = MemoryQueue(), Handlers(), []
    counting(handlers, runs)
    key = queue.add()
    queue.fail("report", link_failure())
    summary = drain(queue, handlers, concurrency=1)
    assert runs == [key]  # the handler ran once
    assert queue.rows[key].history == ["Processing", "Completed"]
    assert summary["completed"] == 1 and queue.closed == 2  # the broken one, and the new one at the end


def test_a_report_chosen_as_a_deadlock_victim_is_made_again_not_turned_into_an_error(quick_retries) -> None:
    queue, handlers, runs = MemoryQueue(), Handlers(), []
    counting(handlers, runs)
    key = queue.add()
    queue.fail("report", deadlock(), deadlock())
    drain(queue, handlers, concurrency=1)
    assert runs == [key]
    assert queue.rows[key].history == ["Processing", "Completed"]


def test_a_report_refused_for_good_is_recorded_as_an_error_saying_so() -> None:
    queue, handlers, runs = MemoryQueue(max_attempts=1), Handlers(), []
    counting(handlers, runs)
    key = queue.add()
    queue.fail("report", db.SqlError([db.ServerMessage(8152, "String or binary data would be truncated.",
                                                       "22001")]))
    drain(queue, handlers, concurrency=1)
    assert queue.rows[key].status == "Failed"  # an Error on its last attempt
    assert "the report failed: SqlError: SQL Server error 8152" in queue.rows[key].fields["Error"]


def test_an_item_not_read_after_every_try_goes_back_to_the_slot_and_the_worker_goes_on(quick_retries,
                                                                                        caplog) -> None:
    queue, handlers, runs = MemoryQueue(), Handlers(), []
    counting(handlers, runs)
    key = queue.add()
    queue.fail("read", *[link_failure()] * (len(runtime.RETRY_WAITS) + 1))  # each on a new connection
    worker, thread, _ = start(queue, handlers, concurrency=1)
    until(queue.settled)
    worker.stop()
    thread.join(TIMEOUT_S)
    assert runs == [key]
    assert queue.rows[key].history == ["Processing", "Processing", "Completed"]  # handed back at once
    assert worker.failure is None
    assert "the item could not be read" in caplog.text


def test_a_slot_that_dies_releases_its_batch_and_stops_the_worker(caplog) -> None:
    queue, handlers = MemoryQueue(), Handlers()

    @handlers.register("Notification", "ResetPassword")
    def exits(item: Item) -> str:
        raise SystemExit("a handler must not do this")

    keys = [queue.add() for _ in range(3)]
    worker, thread, _ = start(queue, handlers, concurrency=1, batch_size=3)
    thread.join(TIMEOUT_S)
    assert not thread.is_alive() and worker.stopping.is_set()
    assert [queue.statuses()[k] for k in keys] == ["Pending"] * 3
    assert "slot-died" in caplog.text
    assert worker.failure.startswith("slot 1 died: SystemExit")  # the command exits 1


def test_a_claim_no_retry_can_cure_stops_the_worker() -> None:
    class Missing:
        queue = "Notification"

        def claim(self, *_args) -> list:
            raise db.SqlError([db.ServerMessage(2812, "Could not find stored procedure", "42000")])

    worker = Worker(Settings("Notification", "test", wait_ms=0), Handlers(), Missing)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    assert not thread.is_alive()


def test_an_idle_worker_waits_in_the_claim_and_takes_work_as_soon_as_it_comes() -> None:
    queue, handlers, done = MemoryQueue(), Handlers(), threading.Event()
    handlers.register("Notification", "ResetPassword")(lambda item: done.set() or "ok")
    worker, thread, _ = start(queue, handlers, concurrency=1, wait_ms=3_000)
    time.sleep(0.2)
    queue.add()
    assert done.wait(2)  # well before the claim's 3 s wait would have ended
    worker.stop()
    thread.join(TIMEOUT_S)


def test_the_idle_back_off_grows_to_its_cap_and_starts_again_on_work() -> None:
    backoff = IdleBackoff(first=0.05, factor=2.0, cap=0.3)
    assert [backoff.next() for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    backoff.reset()
    assert backoff.next() == 0.05


def test_the_summary_gives_the_mean_and_the_nearest_rank_95th_percentile() -> None:
    stats = Stats()
    for ms in range(1, 101):
        stats.timed(ms / 1000)
    stats.add("completed", 100)
    summary = stats.summary()
    assert summary["completed"] == 100
    assert summary["mean_ms"] == pytest.approx(50.5)
    assert summary["p95_ms"] == pytest.approx(95)
    assert Stats().summary()["p95_ms"] is None
    with pytest.raises(ValueError):
        stats.add("done")


def test_each_outcome_is_one_json_line_that_never_carries_the_item_fields(caplog) -> None:
    queue, handlers = MemoryQueue(max_attempts=1), Handlers()
    handlers.register("Notification", "ResetPassword")(lambda item: "ok")
    handlers.register("Notification", "Broken")(lambda item: 1 / 0)
    queue.add(OTP="424242", EmailTo="a@example.com")
    queue.add("Broken", OTP="515151")
    with caplog.at_level(logging.INFO, logger="relq.worker"):
        drain(queue, handlers, concurrency=1)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "relq.worker"]
    assert sorted(line["outcome"] for line in lines) == ["Completed", "Failed"]
    assert all({"queue", "key", "attempt", "type", "outcome", "ms"} <= line.keys() for line in lines)
    assert "424242" not in caplog.text and "515151" not in caplog.text and "a@example.com" not in caplog.text


def test_a_release_at_shutdown_never_takes_back_an_item_whose_handler_has_begun() -> None:
    """The shutdown's release of unstarted items and a slot starting one are one step each
    under the held claims' lock: whichever comes first wins, never both."""
    from relq.worker.procedures import Lost
    from relq.worker.runtime import Held

    queue = MemoryQueue()
    first, second = queue.add(), queue.add()
    procedures = queue.procedures()
    held = Held(procedures, procedures.claim("test/1", 2, 0))
    held.start(first)
    with pytest.raises(Lost):
        held.release_unstarted(first, "the worker is shutting down")
    held.release_unstarted(second, "the worker is shutting down")
    with pytest.raises(Lost):
        held.start(second)
    assert queue.statuses() == {first: "Processing", second: "Pending"}
    assert held.held_keys() == [first]


def test_a_connection_that_stays_away_leaves_the_rest_of_the_batch_to_the_next_claim(quick_retries) -> None:
    queue, handlers, runs = MemoryQueue(), Handlers(), []
    counting(handlers, runs)
    keys = [queue.add() for _ in range(3)]
    queue.fail("read", *[link_failure()] * (len(runtime.RETRY_WAITS) + 1))  # the first item's every try
    summary = drain(queue, handlers, concurrency=1, batch_size=3)
    assert sorted(runs) == keys  # each ran once, the two left unread too, after the next claim
    assert summary["lost"] == 3 and summary["completed"] == 3  # none read on the connection that failed


def test_a_read_no_retry_can_cure_stops_the_worker_and_gives_the_batch_back(quick_retries) -> None:
    """A permission denied on the worker view (a deploy that lost its grants): every item would
    fail its attempts unread; the worker stops instead, saying why, and its batch goes back."""
    queue, handlers, runs = MemoryQueue(), Handlers(), []
    counting(handlers, runs)
    keys = [queue.add() for _ in range(2)]
    queue.fail("read", db.SqlError([db.ServerMessage(229, "The SELECT permission was denied on the object "
                                                          "'Worker_Notification_V'", "42000")]))
    worker, thread, _ = start(queue, handlers, concurrency=1, batch_size=2)
    thread.join(TIMEOUT_S)
    assert not thread.is_alive() and runs == []
    assert worker.failure.startswith("slot 1 died: SqlError: SQL Server error 229")
    assert [queue.statuses()[k] for k in keys] == ["Pending", "Pending"]


def test_a_call_is_not_tried_again_past_the_retry_window(monkeypatch) -> None:
    monkeypatch.setattr(runtime, "RETRY_WINDOW_S", 0.0)  # as after a call that took the query timeout
    queue, handlers, runs = MemoryQueue(), Handlers(), []
    counting(handlers, runs)
    key = queue.add()
    queue.fail("report", link_failure())
    summary = drain(queue, handlers, concurrency=1)
    assert runs == [key, key]  # the report was not made again: the item came back with the next claim
    assert summary["lost"] == 1 and summary["completed"] == 1


def test_a_release_at_shutdown_on_a_broken_connection_is_left_to_the_lease_not_retried(quick_retries) -> None:
    """A shutdown must not wait out every unstarted item's retries on a connection that is away;
    the item in hand still gets its report made again."""
    queue = MemoryQueue()
    keys, worker, thread, result, go_on = in_hand(queue, 3)
    queue.fail("report", link_failure())  # the first release meets a broken link
    worker.stop()
    until(lambda: not queue.faults["report"])
    go_on.set()
    thread.join(TIMEOUT_S)
    statuses = queue.statuses()
    assert statuses[keys[0]] == "Completed"  # reported on a new connection
    assert [statuses[k] for k in keys[1:]] == ["Processing"] * 2  # their leases bring them back
    assert result[0].summary()["released"] == 0


def test_a_snoozed_item_comes_back_when_due_without_spending_an_attempt() -> None:
    queue, handlers, seen = MemoryQueue(max_attempts=1), Handlers(), []

    @handlers.register("Notification", "ResetPassword")
    def later(item: Item) -> Snooze | None:
        seen.append((item.attempt, runtime.time.monotonic()))
        return Snooze(0.3) if len(seen) == 1 else None

    key = queue.add()
    summary = drain(queue, handlers, concurrency=1)

    # With one attempt allowed, a spent attempt would have failed the item instead.
    assert [attempt for attempt, _ in seen] == [1, 1]
    assert seen[1][1] - seen[0][1] >= 0.3  # not claimed again before it was due
    assert queue.rows[key].history == ["Processing", "Pending", "Processing", "Completed"]
    assert queue.rows[key].fields["Response"] == "snoozed for 0.3 s"  # the completion kept it
    assert (summary["snoozed"], summary["completed"], summary["retried"]) == (1, 1, 0)


@pytest.mark.parametrize("seconds", [0, -1, MAX_SNOOZE_S + 1, "5", float("nan")])
def test_a_snooze_out_of_range_is_an_error_that_says_so(seconds) -> None:
    queue, handlers = MemoryQueue(max_attempts=1), Handlers()
    handlers.register("Notification", "ResetPassword")(lambda item: Snooze(seconds))
    key = queue.add()
    drain(queue, handlers)
    assert queue.rows[key].history == ["Processing", "Failed"]
    assert queue.rows[key].fields["Error"].startswith("the handler's snooze must be more than 0 and at most")


def test_a_snooze_is_due_by_the_servers_clock_not_the_workers() -> None:
    class Recording:
        queue = "SyncQueue"

        def __init__(self) -> None:
            self.due = None

        def report(self, claim, status, **outcome):
            self.due = outcome["scheduled_for"]
            return claim, status

    server_now = datetime(2020, 6, 1, 12, 0)  # years away from this machine's clock
    procedures = Recording()
    before = runtime.time.monotonic()  # the token came back with the claim, just now
    held = Held(procedures, [Claim(datetime(2020, 6, 1, 11, 0), server_now, server_now, 1)])
    held.report(datetime(2020, 6, 1, 11, 0), Report("Pending", snooze_s=30))
    waited = runtime.time.monotonic() - before
    assert timedelta(seconds=30) <= procedures.due - server_now <= timedelta(seconds=30 + waited)


def test_a_cancel_ends_the_item_cancelled_with_its_reason() -> None:
    queue, handlers = MemoryQueue(), Handlers()
    handlers.register("Notification", "ResetPassword")(lambda item: Cancel("the account was closed"))
    handlers.register("Notification", "Welcome")(lambda item: Cancel())
    closed, welcome = queue.add(), queue.add("Welcome")
    summary = drain(queue, handlers, concurrency=1)
    assert queue.rows[closed].history == queue.rows[welcome].history == ["Processing", "Cancelled"]
    assert queue.rows[closed].fields["Response"] == "the account was closed"
    assert queue.rows[welcome].fields["Response"] == "cancelled by its handler"
    assert (summary["cancelled"], summary["completed"], summary["lost"]) == (2, 0, 0)


def test_a_running_handler_learns_from_the_lease_renewals_that_its_item_was_taken_over() -> None:
    queue, handlers, told = MemoryQueue(lease_s=1.5), Handlers(), []  # renewed every 0.5 s

    @handlers.register("Notification", "ResetPassword")
    def long_job(item: Item) -> str:
        assert item.lost is None
        queue.take_over(item.key, by="other/1")
        until(lambda: item.lost is not None)
        told.append(item.lost)
        return "stopped early"

    key = queue.add()
    worker, thread, _ = start(queue, handlers, concurrency=1)
    until(lambda: worker.stats.summary()["lost"] == 1)
    worker.stop()
    thread.join(TIMEOUT_S)
    assert len(told) == 1 and "735710" in told[0]
    assert queue.rows[key].history == ["Processing"]  # the other worker's now: nothing reported

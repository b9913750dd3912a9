"""Bulk actions (relq/dashboard/bulk.py) over the in-memory store: a list's filter, counted and
confirmed, worked through in batches by a job the page polls; the ticked rows; stale and
refused items counted, never forced; stopping; the checks before anything is done. Then the
filtered Retry in headless Chromium, from the list to the job's result."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from relq.dashboard import bulk
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import Filter, Unreachable
from relq.dashboard.web import iso
from tests.browser import horizontal_overflow, screenshot
from tests.dashboard.fake_store import NOW, FakeServer, FakeStore, FlakyStore, refused
from tests.dashboard.serving import serving

CSRF = "bulk-csrf"
WAIT_S = 15  # how long a job may take to end here (a bound, not a measurement)
LIST = {"status": "Failed", "type": "CustomerSync", "error": "404"}


def client(store: Any, **settings: Any) -> TestClient:
    settings.setdefault("allow_actions", True)
    return TestClient(create_app(store, Settings(csrf=CSRF, **settings)), follow_redirects=False)


def bulk_url(action: str, scope: str = "list", queue: str = "SyncQueue", picks: list[str] = (),
             **list_query: str) -> str:
    params = [*list_query.items(), ("scope", scope), ("action", action), *(("pick", p) for p in picks)]
    return f"/queues/{queue}/bulk?{urlencode(params)}"


def hidden(html: str, name: str) -> str | None:
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    return found[1] if found else None


def start(app: TestClient, url: str, **extra: str) -> str:
    """Confirm as the page asks, and start the job: its page's address."""
    page = app.get(url)
    assert page.status_code == 200, page.text
    form = {"csrf": CSRF, "confirmed": hidden(page.text, "confirmed"), **extra}
    if hidden(page.text, "upto"):
        form["upto"] = hidden(page.text, "upto")
    started = app.post(url, data=form)
    assert started.status_code == 303, started.text
    return started.headers["location"].removeprefix("http://testserver")


def progress(app: TestClient, job: str) -> dict[str, Any]:
    answer = app.get(job + "/progress.json")
    assert answer.status_code == 200, answer.text
    return answer.json()


def finished(app: TestClient, job: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while (state := progress(app, job))["state"] in ("running", "stopping"):
        assert time.monotonic() < deadline, state
        time.sleep(0.01)
    return state


@pytest.fixture
def admin() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor", "QueueAdmin")


@pytest.fixture
def small_batches(monkeypatch) -> int:
    monkeypatch.setattr(bulk, "BATCH", 4)
    return 4


@dataclass
class Shown:
    """The SyncQueue of the issue: 13 Failed CustomerSync items whose error has 404, among
    others that the list does not show."""

    listed: list[datetime]
    other_error: list[datetime]
    other_type: list[datetime]
    other_state: list[datetime]


def failed_customer_syncs(store: FakeStore) -> Shown:
    listed = store.add("SyncQueue", 6, "Failed", type="CustomerSync", error="HTTP 404 from the CRM")
    other_error = store.add("SyncQueue", 5, "Failed", type="CustomerSync", error="HTTP 500 from the CRM")
    listed += store.add("SyncQueue", 7, "Failed", type="CustomerSync", error="HTTP 404: no such customer")
    other_type = store.add("SyncQueue", 4, "Failed", type="InventorySync", error="HTTP 404 from the store")
    other_state = store.add("SyncQueue", 3, "Error", type="CustomerSync", error="HTTP 404 from the CRM")
    return Shown(listed, other_error, other_type, other_state)


def statuses(store: FakeStore, keys: list[datetime]) -> set[str]:
    return {store._find("SyncQueue", k)["Status"] for k in keys}


# -- the filtered action -------------------------------------------------------------------------


def test_a_filtered_retry_confirms_the_count_and_touches_exactly_the_listed_items_once(
        admin: FakeStore, small_batches: int, caplog) -> None:
    shown = failed_customer_syncs(admin)
    app = client(admin)
    listed = app.get("/queues/SyncQueue?" + urlencode(LIST))
    assert "Every item of this list\n  (13)" in listed.text and 'value="Retry"' in listed.text

    page = app.get(bulk_url("Retry", **LIST))
    said = "Retry the 13 Failed CustomerSync items of SyncQueue whose error contains &#39;404&#39;?"
    assert said in page.text
    assert hidden(page.text, "confirmed") == "13" and hidden(page.text, "upto") == iso(max(shown.listed))
    assert admin.acted == []  # a confirmation does nothing
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        job = start(app, bulk_url("Retry", **LIST))
        state = finished(app, job)

    assert (state["state"], state["confirmed"], state["touched"], state["done"], state["stale"],
            state["refused"]) == ("done", 13, 13, 13, 0, 0)
    touched = [key for _, action, key, _, _ in admin.acted]
    assert touched == sorted(shown.listed)  # each once, oldest first
    assert {a[1] for a in admin.acted} == {"Retry"}
    assert statuses(admin, shown.listed) == {"Pending"}
    assert statuses(admin, shown.other_error + shown.other_type) == {"Failed"}
    assert statuses(admin, shown.other_state) == {"Error"}
    # Read in batches of 4 by key, each past the last key of the one before.
    reads = [where for queue, where, limit in admin.listed if limit == small_batches]
    assert len(reads) == 4 and reads[0].after is None
    assert [w.after for w in reads[1:]] == [sorted(shown.listed)[n] for n in (3, 7, 11)]
    assert all((w.status, w.type, w.error, w.by_update, w.newest_first) == ("Failed", "CustomerSync", "404",
                                                                            False, False) for w in reads)
    lines = [r.getMessage() for r in caplog.records]
    assert any("started" in line for line in lines)
    [done] = [line for line in lines if "confirmed" in line]
    assert ("Retry the 13 Failed CustomerSync items of SyncQueue whose error contains '404' by testclient: "
            "13 confirmed, 13 touched: 13 retried, 0 changed since read, 0 refused; finished") in done

    result = app.get(job)
    assert "Done: 13 items touched of 13 confirmed." in result.text
    assert result.text.count('data-state="done"') == 1 and "Stop</button>" not in result.text
    fragment = app.get(job + "/progress")
    assert 'data-state="done"' in fragment.text and "<html" not in fragment.text  # a fragment, not a page


def test_items_that_leave_the_list_meanwhile_are_not_touched_nor_those_enqueued_after_the_count(
        admin: FakeStore, small_batches: int) -> None:
    shown = failed_customer_syncs(admin)
    app = client(admin)
    url = bulk_url("Retry", **LIST)
    page = app.get(url)
    later = admin.add("SyncQueue", 2, "Failed", type="CustomerSync", error="HTTP 404")  # after the count
    leaving, retried_by_someone = sorted(shown.listed)[9], sorted(shown.listed)[10]
    reads = admin.items

    def items(queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        if where.after is not None:  # between two batches: one item's error changes, another is retried
            admin._find("SyncQueue", leaving)["Error"] = "HTTP 200 after all"
            admin._find("SyncQueue", retried_by_someone)["Status"] = "Pending"
        return reads(queue, where, limit)

    admin.items = items
    started = app.post(url, data={"csrf": CSRF, "confirmed": hidden(page.text, "confirmed"),
                                  "upto": hidden(page.text, "upto")})
    state = finished(app, started.headers["location"])
    touched = [a[2] for a in admin.acted]
    assert leaving not in touched and retried_by_someone not in touched and not set(later) & set(touched)
    assert len(touched) == len(set(touched)) == 11
    assert (state["confirmed"], state["touched"], state["done"]) == (13, 11, 11)
    assert statuses(admin, later) == {"Failed"}


def test_an_item_changed_after_its_batch_read_it_is_counted_stale_and_left_as_it_is(admin: FakeStore) -> None:
    shown = failed_customer_syncs(admin)
    admin.changed_behind |= {shown.listed[0], shown.listed[8]}  # someone acts between the read and the retry
    gone = shown.listed[3]
    acts = admin.act

    def act(queue: str, action: str, key: datetime, *args: Any) -> dict[str, Any]:
        if key == gone:  # purged between the read and the retry
            admin.items_by_queue["SyncQueue"].remove(admin._find("SyncQueue", gone))
        return acts(queue, action, key, *args)

    admin.act = act
    app = client(admin)
    state = finished(app, start(app, bulk_url("Retry", **LIST)))
    assert (state["touched"], state["done"], state["stale"], state["refused"]) == (13, 10, 3, 0)
    assert statuses(admin, [shown.listed[0], shown.listed[8]]) == {"Failed"}  # not forced


def test_a_list_of_more_items_than_a_confirmation_counts_says_more_than(admin: FakeStore,
                                                                        monkeypatch) -> None:
    monkeypatch.setattr(bulk, "COUNT_CAP", 10)
    failed_customer_syncs(admin)
    app = client(admin)
    page = app.get(bulk_url("Retry", **LIST))
    assert "Retry more than 10 Failed CustomerSync items of SyncQueue whose error contains" in page.text
    assert "Retry them all" in page.text
    state = finished(app, start(app, bulk_url("Retry", **LIST)))
    assert (state["more"], state["touched"], state["done"]) == (True, 13, 13)


def test_a_filtered_action_needs_a_list_of_the_states_it_acts_on(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    app = client(admin)
    anything = app.get(bulk_url("Retry", type="CustomerSync"))
    assert anything.status_code == 400 and "Retry acts on Failed items" in anything.text
    pending = app.get(bulk_url("Purge", status="Pending"))
    assert pending.status_code == 400 and "Completed" in pending.text
    listed = app.get("/queues/SyncQueue?type=CustomerSync")
    assert "list one state to act on every item of the list" in listed.text
    assert admin.acted == [] and admin.purged == []


def test_cancel_and_reschedule_of_a_filtered_list(admin: FakeStore) -> None:
    pending = admin.add("SyncQueue", 3, "Pending", type="CustomerSync")
    errors = admin.add("SyncQueue", 2, "Error", type="CustomerSync")
    app = client(admin)
    url = bulk_url("Reschedule", status="Error", type="CustomerSync")
    page = app.get(url)
    assert "Reschedule the 2 Error CustomerSync items of SyncQueue?" in page.text
    assert 'name="scheduled_for"' in page.text
    without = app.post(url, data={"csrf": CSRF, "confirmed": "2", "upto": hidden(page.text, "upto")})
    assert without.status_code == 400 and "give the new due time" in without.text and admin.acted == []
    due = NOW + timedelta(hours=2)
    state = finished(app, start(app, url, scheduled_for=due.isoformat(timespec="seconds")))
    assert state["done"] == 2 and {admin._find("SyncQueue", k)["ScheduledFor"] for k in errors} == {due}

    state = finished(app, start(app, bulk_url("Cancel", status="Pending", type="CustomerSync")))
    assert (state["done"], statuses(admin, pending), statuses(admin, errors)) == (3, {"Cancelled"}, {"Error"})


# -- purge ---------------------------------------------------------------------------------------


def test_purge_removes_the_listed_finished_items_by_key_and_token(admin: FakeStore) -> None:
    done = admin.add("SyncQueue", 6, "Completed", type="CustomerSync")
    kept = admin.add("SyncQueue", 2, "Completed", type="InventorySync")
    admin.held.add(done[1])  # another session holds it: the exact mode passes over it
    admin.changed_behind.add(done[2])
    app = client(admin)
    url = bulk_url("Purge", status="Completed", type="CustomerSync")
    assert "Purge the 6 Completed CustomerSync items of SyncQueue?" in app.get(url).text
    state = finished(app, start(app, url))
    assert (state["touched"], state["done"], state["stale"], state["refused"]) == (6, 4, 1, 1)
    assert state["reasons"] == {bulk.HELD: 1}
    assert [p[1] for p in admin.purged] == done and admin.acted == []
    left = {r["EnqueuedAt"] for r in admin.items_by_queue["SyncQueue"]}
    assert left == {done[1], done[2], *kept}


def test_purge_needs_the_right_to_purge(admin: FakeStore) -> None:
    admin.add("SyncQueue", 2, "Completed", type="CustomerSync")
    admin.granted -= {("dbo.Purge_SyncQueue_trx", "EXECUTE")}
    app = client(admin)
    assert 'value="Purge"' not in app.get("/queues/SyncQueue?status=Completed").text
    refused_page = app.get(bulk_url("Purge", status="Completed"))
    assert refused_page.status_code == 403 and "dbo.Purge_SyncQueue_trx" in refused_page.text
    assert admin.purged == []


# -- ticked rows ---------------------------------------------------------------------------------


def test_ticked_rows_are_acted_on_with_the_tokens_they_were_shown_with(admin: FakeStore, caplog) -> None:
    shown = failed_customer_syncs(admin)
    pending = admin.add("SyncQueue", 1, "Pending", type="CustomerSync")
    app = client(admin)
    listed = app.get("/queues/SyncQueue?status=Failed&type=CustomerSync")
    boxes = re.findall(r'name="pick" form="picked" value="([^"]+)"', listed.text)
    assert len(boxes) == 18 and 'form id="picked"' in listed.text
    key_of = {b.partition("/")[0]: b for b in boxes}
    stale_key, fine_key = shown.listed[0], shown.listed[1]
    picks = [key_of[iso(fine_key)], key_of[iso(stale_key)], key_of[iso(shown.other_error[0])],
             f"{iso(pending[0])}/{iso(pending[0] + timedelta(microseconds=1))}"]
    admin._find("SyncQueue", stale_key)["UpdatedAt"] += timedelta(seconds=5)  # changed since it was shown
    url = bulk_url("Retry", scope="ticked", picks=picks, status="Failed", type="CustomerSync")
    page = app.get(url)
    assert "Retry the 4 ticked items of SyncQueue?" in page.text
    assert all(iso(k) in page.text for k in (fine_key, stale_key, pending[0]))
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        state = finished(app, start(app, url))
    [started] = [r.getMessage() for r in caplog.records if "started" in r.getMessage()]
    assert "Retry the 4 ticked items of SyncQueue by testclient: started" in started
    assert all(iso(k) in started for k in (fine_key, stale_key, shown.other_error[0], pending[0]))
    assert (state["touched"], state["done"], state["stale"], state["refused"]) == (4, 2, 1, 1)
    assert state["reasons"] == {"its lifecycle does not allow that from its present status": 1}
    assert sorted(a[2] for a in admin.acted) == sorted([fine_key, stale_key, shown.other_error[0],
                                                        pending[0]])
    assert statuses(admin, [fine_key, shown.other_error[0]]) == {"Pending"}
    assert statuses(admin, [stale_key]) == {"Failed"} and statuses(admin, pending) == {"Pending"}


def test_ticked_scope_without_a_tick_does_nothing(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    app = client(admin)
    page = app.get(bulk_url("Retry", scope="ticked", **LIST))
    assert page.status_code == 400 and "no row is ticked" in page.text
    posted = app.post(bulk_url("Retry", scope="ticked", **LIST), data={"csrf": CSRF, "confirmed": "13"})
    assert posted.status_code == 400 and admin.acted == []
    bad = app.get(bulk_url("Retry", scope="ticked", picks=["yesterday/today"], **LIST))
    assert bad.status_code == 400 and "a ticked row&#39;s key" in bad.text


# -- what is refused before anything is done -----------------------------------------------------


def test_a_post_without_the_confirmed_count_does_nothing(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    app = client(admin)
    page = app.get(bulk_url("Retry", **LIST))
    answer = app.post(bulk_url("Retry", **LIST), data={"csrf": CSRF, "upto": hidden(page.text, "upto")})
    assert answer.status_code == 400 and "nothing was done" in answer.text
    assert admin.acted == [] and bulk.Jobs().running("SyncQueue") is None
    assert "is running" not in app.get("/queues/SyncQueue?" + urlencode(LIST)).text


def test_a_form_from_elsewhere_is_refused(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    app = client(admin)
    page = app.get(bulk_url("Retry", **LIST))
    forged = app.post(bulk_url("Retry", **LIST), data={"csrf": "guessed", "confirmed": "13",
                                                       "upto": hidden(page.text, "upto")})
    assert forged.status_code == 403 and "did not come from this dashboard" in forged.text
    assert admin.acted == []


def test_without_actions_or_queue_admin_there_is_no_tick_and_no_bulk_action(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    read_only = client(admin, allow_actions=False)
    listed = read_only.get("/queues/SyncQueue?" + urlencode(LIST))
    assert 'name="pick"' not in listed.text and "/bulk" not in listed.text
    assert read_only.get(bulk_url("Retry", **LIST)).status_code == 403
    posted = read_only.post(bulk_url("Retry", **LIST),
                            data={"csrf": CSRF, "confirmed": "13", "upto": iso(NOW)})
    assert posted.status_code == 403 and "--allow-actions" in posted.text

    admin.granted -= {("dbo.Cancel_SyncQueue_trx", "EXECUTE")}
    app = client(admin)
    listed = app.get("/queues/SyncQueue?" + urlencode(LIST))
    assert "needs the role QueueAdmin" in listed.text and 'name="pick"' not in listed.text
    page = app.get(bulk_url("Retry", **LIST))
    assert page.status_code == 403 and "dbo.Cancel_SyncQueue_trx" in page.text
    assert admin.acted == []


def test_the_old_retry_all_is_gone(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    app = client(admin)
    old = app.post("/queues/SyncQueue/retry-failed", data={"csrf": CSRF, "type": "CustomerSync"})
    assert old.status_code == 404
    assert "Retry all" not in app.get("/queues/SyncQueue?status=Failed").text and admin.acted == []


# -- a job under way: stopped, one at a time, an outage ------------------------------------------


def blocked_after(store: FakeStore, n: int) -> tuple[threading.Event, threading.Event]:
    """Make the store's act wait at its ``n``-th call until let go: (reached, let_go)."""
    reached, let_go = threading.Event(), threading.Event()
    acts = store.act

    def act(*args: Any) -> dict[str, Any]:
        if len(store.acted) == n - 1:
            reached.set()
            assert let_go.wait(WAIT_S)
        return acts(*args)

    store.act = act
    return reached, let_go


def test_stop_ends_a_job_after_the_item_under_way(admin: FakeStore, caplog) -> None:
    shown = failed_customer_syncs(admin)
    reached, let_go = blocked_after(admin, 3)
    app = client(admin)
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        job = start(app, bulk_url("Retry", **LIST))
        assert reached.wait(WAIT_S)
        running = app.get(job)
        assert "Running: 2 of 13 items so far." in running.text and "Stop</button>" in running.text
        assert "A bulk Retry of the 13 Failed" in app.get("/queues/SyncQueue?" + urlencode(LIST)).text
        forged = app.post(job + "/stop", data={"csrf": "guessed"})
        assert forged.status_code == 403 and progress(app, job)["state"] == "running"
        stopped = app.post(job + "/stop", data={"csrf": CSRF})
        assert stopped.status_code == 303 and progress(app, job)["state"] == "stopping"
        let_go.set()
        state = finished(app, job)
    assert (state["state"], state["touched"], state["done"], state["stopped_by"]) == ("stopped", 3, 3,
                                                                                      "testclient")
    assert len(admin.acted) == 3 and statuses(admin, sorted(shown.listed)[3:]) == {"Failed"}
    assert "Stopped by testclient after 3 items" in app.get(job).text
    assert any("stopped by testclient" in r.getMessage() for r in caplog.records)


def test_one_job_per_queue_at_a_time(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    admin.add("SyncQueue", 2, "Completed", type="CustomerSync")
    reached, let_go = blocked_after(admin, 1)
    app = client(admin)
    first = start(app, bulk_url("Retry", **LIST))
    assert reached.wait(WAIT_S)
    url = bulk_url("Purge", status="Completed")
    page = app.get(url)
    assert "is running on" in page.text
    second = app.post(url, data={"csrf": CSRF, "confirmed": "2", "upto": hidden(page.text, "upto")})
    assert second.status_code == 409 and first.rsplit("/", 1)[1] in second.text
    assert admin.purged == []
    let_go.set()
    assert finished(app, first)["done"] == 13
    assert finished(app, start(app, url))["done"] == 2  # the queue is free again


def test_a_connection_lost_mid_call_stops_the_job_and_names_the_item(admin: FakeStore) -> None:
    shown = failed_customer_syncs(admin)
    server = FakeServer()
    flaky = FlakyStore(admin, server)
    app = client(flaky)
    page = app.get(bulk_url("Retry", **LIST))
    server.lose_next_call = "after"  # the first retry commits, its answer is lost
    started = app.post(bulk_url("Retry", **LIST), data={"csrf": CSRF, "confirmed": "13",
                                                        "upto": hidden(page.text, "upto")})
    state = finished(app, started.headers["location"])
    first = min(shown.listed)
    assert state["state"] == "failed" and state["touched"] == 0
    assert iso(first) in state["problem"] and "may or may not have been retried" in state["problem"]
    assert len(admin.acted) == 1  # never made again, and nothing after it


def test_a_database_gone_stops_the_job_saying_nothing_more_was_sent(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    acts = admin.act

    def act(*args: Any) -> dict[str, Any]:
        if len(admin.acted) == 5:
            raise Unreachable("cannot reach SQL Server (server=db7.internal)")
        return acts(*args)

    admin.act = act
    app = client(admin)
    state = finished(app, start(app, bulk_url("Retry", **LIST)))
    assert state["state"] == "failed" and state["done"] == 5 and "nothing more was sent" in state["problem"]
    assert "db7" not in state["problem"]


def test_a_list_read_out_of_key_order_stops_the_job_before_touching_an_item_twice(admin: FakeStore) -> None:
    failed_customer_syncs(admin)
    reads = admin.items

    def items(queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        rows = reads(queue, where, limit)
        return rows[::-1] if limit == bulk.BATCH else rows  # a store that ignores the order asked

    admin.items = items
    app = client(admin)
    state = finished(app, start(app, bulk_url("Retry", **LIST)))
    assert state["state"] == "failed" and "out of key order" in state["problem"] and admin.acted == []


def test_a_refusal_other_than_a_stale_token_is_counted_with_its_reason(admin: FakeStore) -> None:
    shown = failed_customer_syncs(admin)
    acts = admin.act

    def act(queue: str, action: str, key: datetime, *args: Any) -> dict[str, Any]:
        if key in shown.listed[:2]:
            admin.acted.append((queue, action, key, args[0], None))
            raise refused(735711, "an unfinished item carries its DedupKey")
        return acts(queue, action, key, *args)

    admin.act = act
    app = client(admin)
    job = start(app, bulk_url("Retry", **LIST))
    state = finished(app, job)
    assert (state["done"], state["stale"], state["refused"]) == (11, 0, 2)
    assert state["reasons"] == {"an unfinished item carries its DedupKey now": 2}
    assert "2: an unfinished item carries its DedupKey now" in app.get(job).text


def test_an_unknown_job_is_said_in_one_line() -> None:
    app = client(FakeStore.with_roles("QueueMonitor", "QueueAdmin"))
    for path in ("", "/progress", "/progress.json"):
        answer = app.get("/queues/SyncQueue/bulk/jobs/nosuchjob" + path)
        assert answer.status_code == 404 and "no bulk job" in answer.text


# -- the parts -----------------------------------------------------------------------------------


def test_describe_says_every_criterion_of_the_filter_and_masks_a_recipient() -> None:
    where = Filter(status="Failed", type="ResetPassword", error="550", email_to="ann.lee@example.com",
                   group_key="tenant-7", after=NOW, newest_first=False)
    text = bulk.describe("Notification", where, 1)
    assert text == ("the 1 Failed ResetPassword item of Notification with group key 'tenant-7' sent to "
                    "'a***@example.com' whose error contains '550'")
    assert "ann.lee@example.com" in bulk.describe("Notification", where, 1, show_personal_data=True)

    @dataclass(frozen=True)
    class Wider(Filter):  # a criterion the list gains later is said too, by its name
        min_attempts: int | None = None

    assert bulk.describe("SyncQueue", Wider(status="Failed", min_attempts=3), 2) == (
        "the 2 Failed items of SyncQueue with min attempts '3'")


def test_batches_follow_the_key_and_stop_at_the_newest_key_counted(admin: FakeStore) -> None:
    keys = admin.add("SyncQueue", 10, "Failed", type="CustomerSync")
    got = list(bulk.batches(admin, "SyncQueue", Filter(status="Failed", by_update=True), keys[6], size=3))
    assert [[k for k, _ in batch] for batch in got] == [keys[0:3], keys[3:6], keys[6:7]]
    assert [t for batch in got for _, t in batch] == [k + timedelta(microseconds=1) for k in keys[:7]]


def test_only_the_last_finished_jobs_are_kept() -> None:
    jobs = bulk.Jobs(kept=2)
    made = []
    for n in range(4):
        job = bulk.Job(f"j{n}", "SyncQueue", "Retry", "the 1 item", 1, "me", "/")
        made.append(jobs.start(job, lambda j: bulk._end(j)))
        deadline = time.monotonic() + WAIT_S
        while job.running:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    with pytest.raises(bulk.Problem):
        jobs.get("SyncQueue", "j0")
    assert jobs.get("SyncQueue", "j3") is made[3] and jobs.get("SyncQueue", "j2") is made[2]
    with pytest.raises(bulk.Problem):
        jobs.get("Notification", "j3")  # a job of another queue is not found under this one


# -- in headless Chromium -------------------------------------------------------------------------



@pytest.fixture
def served() -> Iterator[tuple[str, FakeStore, Shown]]:
    """A dashboard with actions allowed over the issue's SyncQueue, each control call taking
    a tenth of a second, so that the job's page shows it running."""
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    shown = failed_customer_syncs(store)
    acts: Callable[..., dict[str, Any]] = store.act

    def slow(*args: Any) -> dict[str, Any]:
        time.sleep(0.1)
        return acts(*args)

    store.act = slow
    app = create_app(store, Settings(allow_actions=True))
    with serving(app) as url:
        yield url, store, shown


def test_a_filtered_retry_in_chromium_count_confirmation_progress_result(chromium, served,
                                                                         tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, store, shown = served
    wait = WebDriverWait(chromium, WAIT_S)
    chromium.get(url + "/queues/SyncQueue?" + urlencode(LIST))
    assert len(chromium.find_elements(By.CSS_SELECTOR, "table.items tbody tr")) == 13
    ticked_buttons = chromium.find_elements(By.CSS_SELECTOR, "form#picked button")
    assert ticked_buttons and all(not b.is_enabled() for b in ticked_buttons)  # nothing ticked yet
    chromium.find_elements(By.CSS_SELECTOR, "td.pick input")[0].click()
    assert chromium.find_element(By.CSS_SELECTOR, "form#picked .ticked").text == "The 1 ticked row:"
    chromium.find_elements(By.CSS_SELECTOR, "td.pick input")[0].click()  # untick: this test acts on the list
    assert horizontal_overflow(chromium) == []
    screenshot(chromium, tmp_path, "dashboard-bulk-list")

    chromium.find_element(By.CSS_SELECTOR, "form.bulk:not(#picked) button[value='Retry']").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "h1.confirm"))
    assert chromium.find_element(By.CSS_SELECTOR, "h1.confirm").text == (
        "Retry the 13 Failed CustomerSync items of SyncQueue whose error contains '404'?")
    assert store.acted == []
    screenshot(chromium, tmp_path, "dashboard-bulk-confirm")

    chromium.find_element(By.CSS_SELECTOR, "form.confirm button").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#bulk-progress [data-state]"))
    # The page polls: a count that grows while the job runs, then its result.
    wait.until(lambda d: "Running:" in d.find_element(By.ID, "bulk-progress").text
               and int(d.find_element(By.CSS_SELECTOR, "progress").get_attribute("value")) > 0)
    screenshot(chromium, tmp_path, "dashboard-bulk-running")
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#bulk-progress [data-state]").get_attribute(
        "data-state") == "done")
    result = chromium.find_element(By.ID, "bulk-progress").text
    assert "Done: 13 items touched of 13 confirmed." in result
    rows = {r.find_element(By.TAG_NAME, "th").text: r.find_elements(By.TAG_NAME, "td")[0].text
            for r in chromium.find_elements(By.CSS_SELECTOR, "table.outcomes tr")}
    assert rows == {"confirmed": "13", "touched": "13", "retried": "13", "changed since read": "0",
                    "refused": "0"}
    assert horizontal_overflow(chromium) == []
    screenshot(chromium, tmp_path, "dashboard-bulk-done")
    assert sorted(a[2] for a in store.acted) == sorted(shown.listed)
    assert statuses(store, shown.other_error + shown.other_type) == {"Failed"}

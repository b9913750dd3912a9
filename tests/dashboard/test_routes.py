"""Every route of the dashboard, offline, against a store that answers as the views and
procedures do (tests/dashboard/fake_store.py)."""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta

import pytest
from starlette.testclient import TestClient

from relq.dashboard.app import Settings, create_app
from relq.dashboard.items import PAGE
from relq.errors import RelqError
from tests.dashboard.fake_store import T0, FakeStore

CSRF = "the-dashboards-csrf-token"


def client(store: FakeStore, **settings) -> TestClient:
    return TestClient(create_app(store, Settings(csrf=CSRF, **settings)), follow_redirects=False)


def iso(key: datetime) -> str:
    return key.isoformat(timespec="microseconds")


def csrf(html: str) -> str:
    """The CSRF token of the page's form (the dashboard's own)."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)[1]
    assert found == CSRF
    return found


def token(html: str) -> str:
    return re.search(r'name="token" value="([^"]+)"', html)[1]


@pytest.fixture
def admin() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor", "QueueAdmin")


# -- overview ------------------------------------------------------------------------------


def test_overview_shows_every_queue_with_its_counts_and_a_chart(admin: FakeStore) -> None:
    admin.add("Notification", 3, "Pending")
    admin.add("Notification", 2, "Failed")
    admin.add("SyncQueue", 4, "Completed", type="CustomerSync")
    page = client(admin).get("/")
    assert page.status_code == 200
    row = re.search(r'<tr class="[^"]*" data-queue="Notification">(.*?)</tr>', page.text, re.S)[1]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<td class="n">(.*?)</td>', row)]
    head = re.findall(r'<th class="n"[^>]*>(.*?)</th>', page.text)
    # The alarm columns first, so that a narrow screen shows them before it scrolls; then the
    # unfinished states, counted; the finished ones are not, and have no column.
    assert head[:3] == ["past lease", "oldest due, age", "failed/min"]
    assert head[3:7] == ["pending", "processing", "error", "paused"]
    assert "failed" not in head[3:7] and "completed" not in head and "other" not in head
    assert dict(zip(head, cells, strict=True))["pending"] == "3"
    assert cells[3:7] == ["3", "0", "0", "0"]
    # The 2 Failed items are reached from the failed rate, as a list, not a count.
    assert dict(zip(head, cells, strict=True))["failed/min"] == "0.1"
    assert 'href="http://testserver/queues/Notification?status=Failed"' in row
    assert "<svg" in row and 'data-queue="SyncQueue"' in page.text
    assert "refresh.js" in page.text and 'data-src="http://testserver/overview"' in page.text


def test_overview_part_is_the_table_alone_and_follows_the_database(admin: FakeStore) -> None:
    app = client(admin)
    admin.add("Notification", 1, "Pending")
    first = app.get("/overview")
    admin.add("Notification", 4, "Pending")
    second = app.get("/overview")
    assert "<html" not in first.text and "<table" in first.text
    assert ">1</a>" in first.text and ">5</a>" in second.text


def test_an_old_due_item_marks_its_queue(admin: FakeStore) -> None:
    admin.add("Notification", 1, "Pending")  # due an hour ago, as the fake's clock says
    page = client(admin).get("/overview")
    assert 'class="alarm" data-queue="Notification"' in page.text
    assert 'class="" data-queue="SyncQueue"' in page.text


def test_without_queue_monitor_the_overview_names_the_missing_role() -> None:
    page = client(FakeStore.with_roles()).get("/")
    assert page.status_code == 403
    assert "needs the role QueueMonitor" in page.text and "dbo.QueueHealth_V" in page.text


# -- items ---------------------------------------------------------------------------------


def test_items_are_paged_by_key_newest_first(admin: FakeStore) -> None:
    keys = admin.add("Notification", PAGE + 5, "Failed")
    app = client(admin)
    first = app.get("/queues/Notification?status=Failed")
    shown = re.findall(r"/items/([0-9T:.-]+)\"", first.text)
    assert shown == [iso(k) for k in reversed(keys)][:PAGE]
    next_url = re.search(r'href="([^"]+)">Next page', first.text)[1].replace("&amp;", "&")
    assert f"after={iso(keys[5])}".replace(":", "%3A") in next_url
    second = app.get(next_url)
    assert re.findall(r"/items/([0-9T:.-]+)\"", second.text) == [iso(k) for k in reversed(keys[:5])]
    assert "Next page" not in second.text and "First page" in second.text
    assert admin.listed[-1][1].after == keys[5] and admin.listed[-1][2] == PAGE + 1


def test_items_oldest_first_filtered_by_type_and_error(admin: FakeStore) -> None:
    wanted = admin.add("SyncQueue", 2, "Failed", type="CustomerSync", error="HTTP 503 from the CRM")
    admin.add("SyncQueue", 2, "Failed", type="InventorySync", error="HTTP 503 from the CRM")
    admin.add("SyncQueue", 2, "Failed", type="CustomerSync", error="bad payload")
    page = client(admin).get("/queues/SyncQueue", params={"status": "Failed", "type": "CustomerSync",
                                                          "error": "503", "order": "oldest"})
    assert re.findall(r"/items/([0-9T:.-]+)\"", page.text) == [iso(k) for k in wanted]
    assert "HTTP 503 from the CRM" in page.text


def test_items_need_queue_admin_and_say_so() -> None:
    monitor = FakeStore.with_roles("QueueMonitor")
    monitor.add("Notification", 1)
    page = client(monitor).get("/queues/Notification")
    assert page.status_code == 403
    assert "needs the role QueueAdmin" in page.text and "dbo.Worker_Notification_V" in page.text


def test_an_unknown_queue_and_a_bad_key_end_in_one_line(admin: FakeStore) -> None:
    app = client(admin)
    unknown = app.get("/queues/Nope")
    assert unknown.status_code == 404 and "no queue &#39;Nope&#39;" in unknown.text
    bad = app.get("/queues/Notification?after=yesterday")
    assert bad.status_code == 400 and "after must be a date and time" in bad.text
    gone = app.get(f"/queues/Notification/items/{iso(T0)}")
    assert gone.status_code == 404 and "no Notification item has the key" in gone.text


# -- an item -------------------------------------------------------------------------------


def test_an_item_shows_its_columns_and_attempts_masks_addresses_and_never_reads_the_otp(
        admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed", error="SMTP 550 mailbox unavailable")
    admin.attempts_by_key[("Notification", key)] = [
        {"StartedAt": key + timedelta(seconds=5), "AttemptNum": 1, "Step": None, "LockedBy": "host/1",
         "Outcome": "Failed", "Duration": 812, "Response": "", "Error": "SMTP 550 mailbox unavailable"}]
    page = client(admin).get(f"/queues/Notification/items/{iso(key)}")
    assert page.status_code == 200
    assert "a***@example.com" in page.text and "ann.lee@example.com" not in page.text
    assert "<dt>Username</dt><dd>***</dd>" in page.text
    assert "OTP" not in page.text and "123456" not in page.text
    assert all("OTP" not in asked for asked in admin.asked_columns)
    assert "host/1" in page.text and "812 ms" in page.text and "SMTP 550" in page.text
    assert "<form" not in page.text  # actions are off
    assert key.isoformat(sep=" ", timespec="microseconds") in page.text  # keys to the microsecond
    assert "times in UTC" in page.text


def test_show_personal_data_shows_addresses_but_still_not_the_otp(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1)
    page = client(admin, show_personal_data=True).get(f"/queues/Notification/items/{iso(key)}")
    assert "ann.lee@example.com" in page.text and "123456" not in page.text


# -- actions -------------------------------------------------------------------------------


def test_retry_with_the_pages_token_retries_and_logs_one_line(admin: FakeStore, caplog) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    app = client(admin, allow_actions=True)
    page = app.get(f"/queues/Notification/items/{iso(key)}")
    assert ">Retry</button>" in page.text and ">Cancel</button>" not in page.text
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        done = app.post(f"/queues/Notification/items/{iso(key)}/Retry",
                        data={"csrf": csrf(page.text), "token": token(page.text)})
    assert done.status_code == 303 and done.headers["location"].endswith("?done=Retry")
    assert admin._find("Notification", key)["Status"] == "Pending"
    assert admin.acted == [("Notification", "Retry", key, key + timedelta(microseconds=1), None)]
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"dashboard: Retry Notification {iso(key)} by testclient: done, now Pending")
    after = app.get(done.headers["location"])
    assert "Retry: done." in after.text and ">Pending</span>" in after.text


def test_a_stale_token_is_refused_as_changed_since_you_looked(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Pending")
    app = client(admin, allow_actions=True)
    page = app.get(f"/queues/Notification/items/{iso(key)}")
    admin.changed_behind.add(key)
    refused = app.post(f"/queues/Notification/items/{iso(key)}/Pause",
                       data={"csrf": csrf(page.text), "token": token(page.text)})
    assert refused.status_code == 409
    assert "Pause refused: the item changed since you looked" in refused.text
    assert admin._find("Notification", key)["Status"] == "Pending"


def test_reschedule_takes_the_new_due_time_and_needs_one(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Error")
    app = client(admin, allow_actions=True)
    page = app.get(f"/queues/Notification/items/{iso(key)}")
    form = {"csrf": csrf(page.text), "token": token(page.text)}
    missing = app.post(f"/queues/Notification/items/{iso(key)}/Reschedule", data=form)
    assert missing.status_code == 400 and "give the new due time" in missing.text
    done = app.post(f"/queues/Notification/items/{iso(key)}/Reschedule",
                    data={**form, "scheduled_for": "2026-12-01T08:30"})
    assert done.status_code == 303
    assert admin._find("Notification", key)["ScheduledFor"] == datetime(2026, 12, 1, 8, 30)
    page = app.get(f"/queues/Notification/items/{iso(key)}")
    with_offset = app.post(f"/queues/Notification/items/{iso(key)}/Reschedule",  # the queue's times are UTC
                           data={"csrf": csrf(page.text), "token": token(page.text),
                                 "scheduled_for": "2026-12-01T10:30+02:00"})
    assert with_offset.status_code == 303
    assert admin._find("Notification", key)["ScheduledFor"] == datetime(2026, 12, 1, 8, 30)


def test_an_illegal_move_is_refused_in_words(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Completed")
    app = client(admin, allow_actions=True)
    page = app.get(f"/queues/Notification/items/{iso(key)}")
    assert "<button" not in page.text  # nothing is offered for a Completed item
    refused = app.post(f"/queues/Notification/items/{iso(key)}/Cancel",
                       data={"csrf": CSRF, "token": iso(key + timedelta(microseconds=1))})
    assert refused.status_code == 400
    assert "Cancel refused: its lifecycle does not allow that from its present status" in refused.text


def test_forms_without_the_csrf_token_or_with_actions_off_are_refused(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    on = client(admin, allow_actions=True)
    forged = on.post(f"/queues/Notification/items/{iso(key)}/Retry",
                     data={"csrf": "guessed", "token": iso(key + timedelta(microseconds=1))})
    assert forged.status_code == 403 and "did not come from this dashboard" in forged.text
    off = client(admin)
    refused = off.post(f"/queues/Notification/items/{iso(key)}/Retry", data={"csrf": "x", "token": iso(key)})
    assert refused.status_code == 403 and "--allow-actions" in refused.text
    assert admin.acted == [] and admin._find("Notification", key)["Status"] == "Failed"


def test_actions_without_queue_admin_say_which_role_is_missing() -> None:
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    [key] = store.add("Notification", 1, "Failed")
    store.granted -= {("dbo.Retry_Notification_trx", "EXECUTE")}
    app = client(store, allow_actions=True)
    page = app.get(f"/queues/Notification/items/{iso(key)}")
    assert "needs the role QueueAdmin" in page.text and "dbo.Retry_Notification_trx" in page.text
    assert "<button" not in page.text


# -- metrics -------------------------------------------------------------------------------


def test_metrics_without_queue_monitor_are_refused_in_one_line() -> None:
    response = client(FakeStore.with_roles()).get("/metrics")
    assert response.status_code == 403
    assert response.text.count("\n") == 1 and "QueueMonitor" in response.text


def test_a_database_that_cannot_be_reached_is_said_without_the_connection_string(
        admin: FakeStore, caplog) -> None:
    admin.down = RelqError("cannot reach SQL Server (server=db7.internal, uid=relq_ops): timeout")
    app = client(admin)
    with caplog.at_level(logging.WARNING, logger="relq.dashboard"):
        page, metrics = app.get("/"), app.get("/metrics")
    assert page.status_code == 503 and metrics.status_code == 503
    for shown in (page.text, metrics.text):
        assert "cannot reach the database" in shown and "db7" not in shown and "relq_ops" not in shown
    assert "server=db7.internal" in caplog.text

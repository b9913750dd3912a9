"""The overview's queue controls, offline: a paused queue or type shown with who paused it,
when and why; Pause (with a reason) and Resume offered to QueueAdmin only, with actions on;
each action audited in one log line naming who acted, and the person a trusted proxy names
recorded as PausedBy; refusals in a box of their own; /metrics' relq_queue_paused and limits."""

from __future__ import annotations

import logging
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from relq.dashboard.app import Settings, create_app
from tests.dashboard.fake_store import NOW, FakeStore

CSRF = "the-dashboards-csrf-token"
PROXY = ("10.0.0.2", 41000)


def client(store: FakeStore, peer: tuple[str, int] = ("127.0.0.1", 50000), **settings) -> TestClient:
    return TestClient(create_app(store, Settings(csrf=CSRF, **settings)), follow_redirects=False, client=peer)


@pytest.fixture
def admin() -> FakeStore:
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    store.login_name = "relq_ops"
    return store


def control_row(html: str, target: str) -> str:
    return re.search(rf'<tr class="[^"]*" data-target="{re.escape(target)}">(.*?)</tr>', html, re.S)[1]


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_the_overview_shows_a_paused_queue_and_type_with_who_when_and_why(admin: FakeStore) -> None:
    admin.paused[("SyncQueue", "CustomerSync")] = ("ann", NOW, "the CRM is down")
    admin.paused[("Notification", None)] = ("bob", NOW, "SMTP relay maintenance")
    page = client(admin).get("/")
    assert page.status_code == 200
    sync = re.search(r'data-queue="SyncQueue">(.*?)</tr>', page.text, re.S)[1]
    notification = re.search(r'data-queue="Notification">(.*?)</tr>', page.text, re.S)[1]
    assert '<span class="paused-tag" title="claims take nothing of CustomerSync">1 type paused</span>' in sync
    assert ">paused</span>" in notification
    assert text(control_row(page.text, "SyncQueue.CustomerSync")) == \
        "CustomerSync paused ann, 2026-11-26 10:00: the CRM is down none"
    assert text(control_row(page.text, "SyncQueue.InventorySync")) == "InventorySync running none"
    assert text(control_row(page.text, "Notification.ResetPassword")) == \
        "ResetPassword paused with its queue none"
    assert "1 per group" in control_row(page.text, "SyncQueue")
    assert "<form" not in page.text  # actions are off


def test_pause_and_resume_are_offered_to_queue_admin_with_actions_on(admin: FakeStore) -> None:
    admin.paused[("SyncQueue", "CustomerSync")] = ("ann", NOW, "the CRM is down")
    page = client(admin, allow_actions=True).get("/")
    paused, running = control_row(page.text, "SyncQueue.CustomerSync"), control_row(page.text, "SyncQueue")
    assert 'action="http://testserver/queues/SyncQueue/controls/Resume"' in paused
    assert 'name="type" value="CustomerSync"' in paused and "reason" not in paused
    assert 'action="http://testserver/queues/SyncQueue/controls/Pause"' in running
    assert 'name="type"' not in running
    assert '<input type="text" name="reason" maxlength="400" required>' in running

    monitor = FakeStore.with_roles("QueueMonitor")
    page = client(monitor, allow_actions=True).get("/")
    assert "<form" not in page.text
    assert "pausing and resuming queues needs the role QueueAdmin: this login lacks dbo.Pause_Queue_trx, " \
           "dbo.Resume_Queue_trx" in page.text


def test_a_pause_with_a_reason_is_done_recorded_for_the_login_and_logged(admin: FakeStore, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        done = client(admin, allow_actions=True).post(
            "/queues/SyncQueue/controls/Pause",
            data={"csrf": CSRF, "type": "CustomerSync", "reason": " quota "})
    assert done.status_code == 303
    assert done.headers["location"].endswith("/?done=Pause&target=SyncQueue.CustomerSync")
    assert admin.controlled == [("Pause", "SyncQueue", "CustomerSync", "quota", None)]  # None: the login
    assert [r.getMessage() for r in caplog.records] == [
        "dashboard: Pause SyncQueue.CustomerSync by login relq_ops at 127.0.0.1: done, because 'quota'"]
    page = client(admin, allow_actions=True).get(done.headers["location"])
    assert '<p class="message" role="status">Pause of SyncQueue.CustomerSync: done.</p>' in page.text
    assert "relq_ops, 2026-11-26 10:00: quota" in text(control_row(page.text, "SyncQueue.CustomerSync"))


def test_a_resume_of_the_queue_is_done_and_logged(admin: FakeStore, caplog) -> None:
    admin.paused[("SyncQueue", None)] = ("ann", NOW, "deploy")
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        done = client(admin, allow_actions=True).post("/queues/SyncQueue/controls/Resume",
                                                      data={"csrf": CSRF})
    assert done.status_code == 303
    assert admin.controlled == [("Resume", "SyncQueue", None, None, None)]
    assert ("SyncQueue", None) not in admin.paused
    assert [r.getMessage() for r in caplog.records] == [
        "dashboard: Resume SyncQueue by login relq_ops at 127.0.0.1: done"]


def test_the_user_a_trusted_proxy_names_is_recorded_as_who_paused(admin: FakeStore) -> None:
    proxied = client(admin, PROXY, allow_actions=True, trusted_proxies=("10.0.0.2/32",),
                     user_header="X-Forwarded-User")
    done = proxied.post("/queues/Notification/controls/Pause", data={"csrf": CSRF, "reason": "relay down"},
                        headers={"X-Forwarded-User": "alice@corp", "X-Forwarded-For": "203.0.113.9"})
    assert done.status_code == 303
    assert admin.controlled == [("Pause", "Notification", None, "relay down", "alice@corp")]
    assert admin.paused[("Notification", None)][0] == "alice@corp"


@pytest.mark.parametrize("form, refusal", [
    ({"type": "CustomerSync", "reason": "  "}, "Pause of SyncQueue.CustomerSync: give the reason"),
    ({"type": "NoSuchType", "reason": "x"},
     "Pause of SyncQueue.NoSuchType refused: no such queue or job type"),
])
def test_a_pause_without_a_reason_or_of_an_unknown_type_is_refused_in_its_own_box(
    admin: FakeStore, form, refusal
) -> None:
    page = client(admin, allow_actions=True).post("/queues/SyncQueue/controls/Pause",
                                                  data={"csrf": CSRF, **form})
    assert page.status_code == 400
    assert re.search(r'<p class="problem refusal" role="alert"><strong>Not done\.</strong> ([^<]*)</p>',
                     page.text)[1].startswith(refusal)
    assert admin.paused == {}


def test_a_control_is_refused_without_the_dashboards_form_or_with_actions_off(admin: FakeStore) -> None:
    forged = client(admin, allow_actions=True).post("/queues/SyncQueue/controls/Pause",
                                                    data={"csrf": "forged", "reason": "x"})
    off = client(admin).post("/queues/SyncQueue/controls/Pause", data={"csrf": CSRF, "reason": "x"})
    unknown = client(admin, allow_actions=True).post("/queues/SyncQueue/controls/Purge", data={"csrf": CSRF})
    assert (forged.status_code, off.status_code, unknown.status_code) == (403, 403, 404)
    monitor = FakeStore.with_roles("QueueMonitor")
    refused = client(monitor, allow_actions=True).post("/queues/SyncQueue/controls/Pause",
                                                       data={"csrf": CSRF, "reason": "x"})
    assert refused.status_code == 403 and "needs the role QueueAdmin" in refused.text
    assert admin.controlled == monitor.controlled == []


def test_metrics_give_each_queue_and_type_paused_or_not_and_the_limits(admin: FakeStore) -> None:
    admin.paused[("SyncQueue", "InventorySync")] = ("ann", NOW, "API down")
    admin.paused[("Notification", None)] = ("ann", NOW, "deploy")
    families = {f.name: f for f in text_string_to_metric_families(client(admin).get("/metrics").text)}
    paused = {(s.labels["queue"], s.labels["type"]): s.value for s in families["relq_queue_paused"].samples}
    assert paused == {("Notification", ""): 1, ("Notification", "ResetPassword"): 1, ("SyncQueue", ""): 0,
                      ("SyncQueue", "CustomerSync"): 0, ("SyncQueue", "InventorySync"): 1}
    groups = {s.labels["queue"]: s.value for s in families["relq_queue_group_limit"].samples}
    assert groups == {"Notification": 1, "SyncQueue": 1}
    assert list(families["relq_queue_type_limit"].samples) == []  # no type is limited

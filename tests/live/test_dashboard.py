"""The dashboard over a deployed database, as a member of its roles: a database user
(without login) that is a member of QueueMonitor, or of QueueMonitor and QueueAdmin,
impersonated on the dashboard's connection (EXECUTE AS USER, as an application login
mapped to that user would be; tests/live/test_roles.py does the same). A monitor looks
and can do nothing else; an operator retries a Failed item through the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from relq import db
from relq.dashboard import privacy
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import SqlStore
from relq.worker.procedures import SqlProcedures

pytestmark = pytest.mark.mssql

JOB_TYPE = "RelqDashboardJob"  # a type of its own, so that no other test's item is claimed here
CSRF = "live-csrf"


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Any]:
    """As dbo: the job type, and no items of it yet."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    db.run_batch(conn.cursor(), f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
    """)
    yield conn
    conn.close()


@pytest.fixture
def store_as(member, dbo) -> Any:
    """The dashboard's store on connections that are a new member of ``roles``."""

    def make(*roles: str) -> SqlStore:
        return SqlStore(member(*roles))

    return make


@pytest.fixture
def dashboard_as(store_as) -> Any:
    """A dashboard (actions allowed) whose connection is a new member of ``roles``."""

    def make(*roles: str) -> TestClient:
        settings = Settings(allow_actions=True, csrf=CSRF)
        return TestClient(create_app(store_as(*roles), settings), follow_redirects=False)

    return make


def failed_item(dbo) -> tuple[Any, Any]:
    """A sync job of JOB_TYPE, claimed and reported Failed: (key, token)."""
    db.run_batch(dbo.cursor(), f"""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, '{JOB_TYPE}', N'dashboard-test');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    procedures = SqlProcedures(dbo, "SyncQueue")
    [claim] = procedures.claim("dashboard-test/1", 1, 0, type=JOB_TYPE)
    renewed, status = procedures.report(claim, "Failed", error="HTTP 410 from the CRM: gone")
    assert status == "Failed"
    return claim.key, renewed.token


def status_of(dbo, key) -> str:
    return db.query(dbo.cursor(), "SELECT [Status] FROM dbo.SyncQueue WHERE EnqueuedAt = ?;", key)[0][0]


def iso(value) -> str:
    return value.isoformat(timespec="microseconds")


def test_a_monitor_sees_the_queues_and_metrics_and_is_told_what_else_needs_queue_admin(dbo, dashboard_as):
    app = dashboard_as("QueueMonitor")
    assert app.get("/metrics").status_code == 200  # the counters' first scrape: they count from here
    key, token = failed_item(dbo)

    overview = app.get("/")
    assert overview.status_code == 200, overview.text
    assert 'data-queue="Notification"' in overview.text and 'data-queue="SyncQueue"' in overview.text
    metrics = app.get("/metrics")
    assert metrics.status_code == 200
    families = {family.name: family for family in text_string_to_metric_families(metrics.text)}
    expected = {"relq_queue_items", "relq_queue_oldest_due_seconds", "relq_queue_past_lease_items"}
    assert expected <= set(families)
    # The Failed item is not counted (no series, not even a zero); its attempt is, in the failed counter.
    counted = {(s.labels["queue"], s.labels["status"]) for s in families["relq_queue_items"].samples}
    assert {status for queue, status in counted if queue == "SyncQueue"} == {"Pending", "Processing", "Error",
                                                                             "Paused"}
    failed = {s.labels["queue"]: s.value for s in families["relq_queue_failed"].samples}
    assert failed["SyncQueue"] == 1

    items = app.get("/queues/SyncQueue?status=Failed")
    assert items.status_code == 403 and "needs the role QueueAdmin" in items.text
    item = app.get(f"/queues/SyncQueue/items/{iso(key)}")
    assert item.status_code == 403 and "dbo.Worker_SyncQueue_V" in item.text
    retry = app.post(f"/queues/SyncQueue/items/{iso(key)}/Retry", data={"csrf": CSRF, "token": iso(token)})
    assert retry.status_code == 403 and "dbo.Retry_SyncQueue_trx" in retry.text
    assert status_of(dbo, key) == "Failed"


def test_an_operator_finds_a_failed_item_and_retries_it(dbo, dashboard_as):
    key, _ = failed_item(dbo)
    app = dashboard_as("QueueMonitor", "QueueAdmin")

    listed = app.get(f"/queues/SyncQueue?status=Failed&type={JOB_TYPE}")
    assert listed.status_code == 200, listed.text
    assert iso(key) in listed.text and "HTTP 410 from the CRM" in listed.text
    page = app.get(f"/queues/SyncQueue/items/{iso(key)}")
    assert page.status_code == 200, page.text
    assert "dashboard-test/1" in page.text  # its attempt, from dbo.QueueAttempt_V
    token = re.search(r'name="token" value="([^"]+)"', page.text)[1]

    # A token from before a change is refused, and the item stays as it is.
    stale = app.post(f"/queues/SyncQueue/items/{iso(key)}/Retry", data={"csrf": CSRF, "token": iso(key)})
    assert stale.status_code == 409 and "changed since you looked" in stale.text
    assert status_of(dbo, key) == "Failed"

    done = app.post(f"/queues/SyncQueue/items/{iso(key)}/Retry", data={"csrf": CSRF, "token": token})
    assert done.status_code == 303, done.text
    assert status_of(dbo, key) == "Pending"
    assert "Retry: done." in app.get(done.headers["location"]).text


def test_an_admin_sees_the_types_that_mark_secret_and_personal_columns(store_as):
    """privacy.py tells such a column by its type, whatever its name: TYPE_NAME answers NULL to a
    user with no permission on the type, so QueueAdmin is granted VIEW DEFINITION on them."""
    columns = {c.name: c for c in store_as("QueueAdmin").columns("Notification")}
    assert {name: columns[name].type for name in ("OTP", "EmailTo", "PhoneNumber", "Username")} == {
        "OTP": "OtpCode", "EmailTo": "Email", "PhoneNumber": "PhoneNumber", "Username": "DbUsername"}
    assert privacy.is_secret(replace(columns["OTP"], name="ResetCode"))  # by its type, not its name
    assert privacy.is_personal(replace(columns["EmailTo"], name="Contact"))

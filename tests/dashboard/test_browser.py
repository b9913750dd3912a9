"""The dashboard in headless Chromium, served by uvicorn over the in-memory store: the
overview (and its live refresh), a queue's Failed items, an item page, and Retry clicked
with actions allowed. Screenshots go to RELQ_SCREENSHOTS when it is set."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from relq.dashboard.app import Settings, create_app
from relq.dashboard.chart import History
from relq.status import QueueHealth
from tests.browser import horizontal_overflow, screenshot
from tests.dashboard.fake_store import NOW, FakeStore
from tests.dashboard.serving import serving

WAIT_S = 15  # how long a page may take to show what it should (a bound, not a measurement)



def half_an_hour() -> History:
    """Readings of the last 30 minutes, as a dashboard open that long would have: a
    steady SyncQueue and a Notification queue whose mail server began refusing."""
    history = History(every_s=1.0)
    now = time.time()
    for n in range(60):
        at = now - 1800 + 30 * n
        history.add(at, [
            QueueHealth("Notification", completed_per_min=max(0.0, 6 - n * 6 / 40),
                        failed_per_min=min(2 / 15, n / 300)),
            QueueHealth("SyncQueue", completed_per_min=2.7 + math.sin(n / 4), failed_per_min=0.0),
        ])
    return history


@pytest.fixture
def served() -> Iterator[tuple[str, FakeStore]]:
    """A dashboard with actions allowed, its overview refreshed every second."""
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    store.add("Notification", 12, "Pending")
    store.add("Notification", 3, "Processing")
    failed = store.add("Notification", 2, "Failed", error="SMTP 550 5.1.1 mailbox unavailable")
    store.attempts_by_key[("Notification", failed[0])] = [
        {"StartedAt": failed[0] + timedelta(seconds=60 * n), "AttemptNum": n, "Step": None,
         "LockedBy": f"mail-1/{n}", "Outcome": "Failed" if n == 3 else "Error", "Duration": 400 + n,
         "Response": "", "Error": "SMTP 550 5.1.1 mailbox unavailable"} for n in (3, 2, 1)]
    store.add("SyncQueue", 40, "Completed", type="CustomerSync")
    store.add("SyncQueue", 5, "Error", type="InventorySync", error="HTTP 503 from the warehouse API",
              ScheduledFor=NOW + timedelta(minutes=5))  # backing off: not due yet
    app = create_app(store, Settings(allow_actions=True, refresh_s=1.0), history=half_an_hour())
    with serving(app) as url:
        yield url, store


def test_overview_item_and_retry_in_chromium(chromium, served, tmp_path: Path) -> None:
    url, store = served
    wait = WebDriverWait(chromium, WAIT_S)

    chromium.get(url + "/")
    row = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification']")
    assert "12" in row.text and "alarm" in row.get_attribute("class")
    sync = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='SyncQueue']")
    assert "alarm" not in sync.get_attribute("class")
    assert chromium.find_elements(By.CSS_SELECTOR, "tr[data-queue='SyncQueue'] svg.chart polyline.completed")
    assert horizontal_overflow(chromium) == []
    # The live refresh: what the database says now reaches the open page, without a reload.
    store.add("Notification", 30, "Pending")
    wait.until(lambda d: ">42<" in d.find_element(By.ID, "overview").get_attribute("innerHTML"))
    screenshot(chromium, tmp_path, "dashboard-overview")

    chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification'] a[href$='status=Failed']").click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "h1").text == "Notification: Failed")
    assert len(chromium.find_elements(By.CSS_SELECTOR, "table.items tbody tr")) == 2
    screenshot(chromium, tmp_path, "dashboard-failed")

    chromium.find_elements(By.CSS_SELECTOR, "table.items tbody tr a")[-1].click()  # the older one
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.attempts"))
    assert "a***@example.com" in chromium.page_source and "123456" not in chromium.page_source
    assert len(chromium.find_elements(By.CSS_SELECTOR, "table.attempts tbody tr")) == 3
    assert horizontal_overflow(chromium) == []
    screenshot(chromium, tmp_path, "dashboard-item")

    chromium.find_element(By.CSS_SELECTOR, "button.retry").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "p.message"))
    assert chromium.find_element(By.CSS_SELECTOR, "p.message").text == "Retry: done."
    assert chromium.find_element(By.CSS_SELECTOR, "h1 .status").text == "Pending"
    assert [a[1] for a in store.acted] == ["Retry"]
    screenshot(chromium, tmp_path, "dashboard-retried")


def test_with_javascript_off_everything_but_the_live_refresh_works(chromium, served, tmp_path: Path) -> None:
    url, store = served
    wait = WebDriverWait(chromium, WAIT_S)
    chromium.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        chromium.get("data:text/html,<p id=js>off</p><script>document.getElementById('js').textContent='on'"
                     "</script>")
        assert chromium.find_element(By.ID, "js").text == "off"  # scripts do not run
        chromium.get(url + "/queues/Notification?status=Failed")
        Select(chromium.find_element(By.NAME, "order")).select_by_value("oldest")
        chromium.find_element(By.CSS_SELECTOR, "form.filter button").click()
        wait.until(lambda d: "order=oldest" in d.current_url)
        chromium.find_elements(By.CSS_SELECTOR, "table.items tbody tr a")[0].click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.retry"))
        chromium.find_element(By.CSS_SELECTOR, "button.retry").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "p.message"))
        assert chromium.find_element(By.CSS_SELECTOR, "p.message").text == "Retry: done."
        assert [a[1] for a in store.acted] == ["Retry"]
        screenshot(chromium, tmp_path, "dashboard-no-javascript")
    finally:
        chromium.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_a_paused_queue_shows_on_the_overview_and_a_type_is_paused_by_a_click(chromium, served,
                                                                             tmp_path: Path) -> None:
    url, store = served
    wait = WebDriverWait(chromium, WAIT_S)
    store.paused[("Notification", None)] = ("ann", NOW, "SMTP relay maintenance until 11:00")

    chromium.get(url + "/")
    tag = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification'] .paused-tag")
    assert tag.text == "paused" and tag.is_displayed()
    queue = chromium.find_element(By.CSS_SELECTOR, "tr[data-target='Notification']")
    assert "ann" in queue.text and "SMTP relay maintenance until 11:00" in queue.text
    assert "paused with its queue" in chromium.find_element(
        By.CSS_SELECTOR, "tr[data-target='Notification.ResetPassword']").text
    row = chromium.find_element(By.CSS_SELECTOR, "tr[data-target='SyncQueue.CustomerSync']")
    row.find_element(By.NAME, "reason").send_keys("the CRM's API quota is spent")
    row.find_element(By.CSS_SELECTOR, "button.pause").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "p.message"))
    message = chromium.find_element(By.CSS_SELECTOR, "p.message").text
    assert message == "Pause of SyncQueue.CustomerSync: done."
    row = chromium.find_element(By.CSS_SELECTOR, "tr[data-target='SyncQueue.CustomerSync']")
    assert "the CRM's API quota is spent" in row.text and row.find_elements(By.CSS_SELECTOR, "button.resume")
    tag = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='SyncQueue'] .paused-tag")
    assert tag.text == "1 type paused"
    assert store.controlled == [("Pause", "SyncQueue", "CustomerSync", "the CRM's API quota is spent", None)]
    assert horizontal_overflow(chromium) == []
    screenshot(chromium, tmp_path, "dashboard-paused")

"""The overview in headless Chromium while the database goes away and comes back, served by
uvicorn over a FlakyStore (tests/dashboard/fake_store.py) and refreshed every second: the
banner comes within a refresh, the figures stay greyed and marked stale, an item page says
what the outage is, the banner goes once the database answers; and when the dashboard itself
stops answering, the page says so on its own. Screenshots go to RELQ_SCREENSHOTS when set."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from relq.dashboard.app import Settings, create_app
from tests.browser import horizontal_overflow, screenshot
from tests.dashboard.fake_store import FakeStore, FlakyStore
from tests.dashboard.serving import free_port, port_of, running
from tests.dashboard.test_browser import WAIT_S, half_an_hour

REFRESH_S = 1.0
GREY = "rgba(138, 147, 156, 1)"  # the stylesheet's stale figures (#8a939c)


@pytest.fixture
def flaky_served() -> Iterator[tuple[str, FlakyStore, uvicorn.Server]]:
    store = FlakyStore(FakeStore.with_roles("QueueMonitor", "QueueAdmin"))
    store.add("Notification", 12, "Pending")
    store.add("Notification", 2, "Failed", error="SMTP 550 5.1.1 mailbox unavailable")
    store.add("SyncQueue", 40, "Completed", type="CustomerSync")
    store.add("SyncQueue", 5, "Error", type="InventorySync", error="HTTP 503 from the warehouse API")
    app = create_app(store, Settings(allow_actions=True, refresh_s=REFRESH_S), history=half_an_hour())
    with running(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")) as server:
        yield f"http://127.0.0.1:{port_of(server)}", store, server


def banners(driver: Any) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, "#overview .outage[role='alert']")


def figure_colour(driver: Any) -> str:
    cell = driver.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification'] td.n")
    return cell.value_of_css_property("color")


def test_the_overview_through_an_outage_in_chromium(chromium, flaky_served, tmp_path: Path) -> None:
    url, store, server = flaky_served
    wait = WebDriverWait(chromium, WAIT_S)
    chromium.get(url + "/")
    assert not banners(chromium) and figure_colour(chromium) != GREY
    live = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification']").text

    store.server.go_down()
    went = time.monotonic()
    wait.until(banners)
    assert time.monotonic() - went < 2 * REFRESH_S + 2  # the next refresh brings it (a bound, with slack)
    banner = banners(chromium)[0].text
    assert "The database is not answering since" in banner and "last good read" in banner
    assert "not live" in banner
    mark = chromium.find_element(By.CSS_SELECTOR, "#overview .stale-mark").text
    assert mark.startswith("stale since ") and mark.endswith(" UTC")
    # the figures stay as last read, greyed
    assert chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification']").text == live
    assert figure_colour(chromium) == GREY
    assert horizontal_overflow(chromium) == []
    screenshot(chromium, tmp_path, "dashboard-outage")

    # still down some refreshes later: the banner stays, and says so again each time
    time.sleep(2 * REFRESH_S)
    assert len(banners(chromium)) == 1

    key = store.items_by_queue["Notification"][-1]["EnqueuedAt"].isoformat(timespec="microseconds")
    chromium.get(f"{url}/queues/Notification/items/{key}")
    assert chromium.find_element(By.TAG_NAME, "h1").text == "The database is not answering"
    assert "Last good read:" in chromium.find_element(By.CSS_SELECTOR, ".outage-facts").text
    assert "SQL Server error" not in chromium.page_source
    screenshot(chromium, tmp_path, "dashboard-outage-item")

    chromium.get(url + "/")  # the overview drawn while down: stale from the start
    assert banners(chromium) and figure_colour(chromium) == GREY
    store.add("Notification", 30, "Pending")
    store.server.come_back()
    wait.until(lambda d: not banners(d))
    assert ">42<" in chromium.find_element(By.ID, "overview").get_attribute("innerHTML")
    assert figure_colour(chromium) != GREY and not chromium.find_elements(By.CSS_SELECTOR, ".stale-mark")
    screenshot(chromium, tmp_path, "dashboard-recovered")

    # the dashboard itself goes: the script keeps the figures and says since when nothing answered
    server.should_exit = True
    wait.until(lambda d: d.find_elements(By.ID, "unanswered"))
    said = chromium.find_element(By.ID, "unanswered").text
    assert said.startswith("The dashboard has not answered since ") and "not live" in said
    assert chromium.find_element(By.ID, "unanswered").get_attribute("role") == "alert"
    assert figure_colour(chromium) == GREY
    screenshot(chromium, tmp_path, "dashboard-unanswered")

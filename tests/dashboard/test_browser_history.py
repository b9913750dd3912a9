"""An item's full history and a queue's stuck work in headless Chromium, served by uvicorn over the
in-memory store: a 30,000-character traceback collapsed, opened in a box that scrolls on its own
(the page stays a page), copied whole with its button, opened from the attempts' table; the
overview's past-lease count leading to the items past their lease and their workers. Nothing
breaks the Content-Security-Policy. Screenshots go to RELQ_SCREENSHOTS when it is set."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from relq.dashboard.app import Settings, create_app
from tests.browser import horizontal_overflow, screenshot
from tests.dashboard.fake_store import FakeStore
from tests.dashboard.serving import serving
from tests.dashboard.test_browser import WAIT_S
from tests.dashboard.test_history import attempt, traceback

MIN = timedelta(minutes=1)
# Records what the Content-Security-Policy blocks, from before the page's own scripts run (a
# script the DevTools protocol adds is not the page's, so the policy does not block it).
WATCH_CSP = ("window.__blocked = []; document.addEventListener('securitypolicyviolation', "
             "e => window.__blocked.push(e.violatedDirective + ' ' + e.blockedURI));")


@pytest.fixture
def served() -> Iterator[tuple[str, FakeStore, dict[str, Any]]]:
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    first, last = traceback(30_000), traceback(31_105, last="TimeoutError: the relay did not answer")
    [key] = store.add("Notification", 1, "Failed", error=last)
    store.attempts_by_key[("Notification", key)] = [
        attempt(key, 3, "Failed", last), attempt(key, 2, "Error", "SMTP 451 4.7.1 try again later", "451"),
        attempt(key, 1, "Error", first, "250 2.0.0 OK\n" + "250-PIPELINING " * 600)]
    store.add("SyncQueue", 20, "Pending", type="CustomerSync")
    dead = store.hold("SyncQueue", "sync-7f3a9c/1", [-12 * MIN, -11 * MIN, -11 * MIN], type="CustomerSync")
    store.hold("SyncQueue", "sync-7f3a9c/2", [-MIN / 2, 3 * MIN], type="InventorySync", Step="Upload")
    store.hold("SyncQueue", "sync-b21e04/1", [4 * MIN, 4 * MIN], type="CustomerSync", AttemptNum=2)
    app = create_app(store, Settings(refresh_s=60.0))
    with serving(app) as url:
        yield url, store, {"key": key, "first": first, "last": last, "dead": dead}


@pytest.fixture
def watched(chromium) -> Iterator[Any]:
    added = chromium.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_CSP})
    try:
        yield chromium
    finally:
        chromium.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument",
                                 {"identifier": added["identifier"]})


def height(driver: Any) -> int:
    return int(driver.execute_script("return document.documentElement.scrollHeight"))


def iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def test_a_30000_character_traceback_opens_in_its_own_box_and_copies_whole(watched, served,
                                                                            tmp_path: Path) -> None:
    url, _, made = served
    driver, wait = watched, WebDriverWait(watched, WAIT_S)
    driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    driver.get(f"{url}/queues/Notification/items/{iso(made['key'])}")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.copy:not([hidden])"))
    box = driver.find_element(By.ID, "attempt-3-error")  # attempt 1's error, the 30,000 characters
    assert box.tag_name == "details" and box.get_attribute("open") is None  # collapsed
    summary = box.find_element(By.TAG_NAME, "summary").text
    assert summary.startswith("Traceback (most recent call last):")
    assert "smtplib.SMTPRecipientsRefused: <script>alert('x')</script>" in summary  # its last line, as text
    assert f"{len(made['first']):,} characters" in summary
    collapsed = height(driver)
    assert collapsed < 2600, collapsed  # every text collapsed: three attempts and the item, a page
    assert horizontal_overflow(driver) == []
    screenshot(driver, tmp_path, "dashboard-history-collapsed")

    box.find_element(By.TAG_NAME, "summary").click()
    wait.until(lambda d: box.get_attribute("open") is not None)
    pre = driver.find_element(By.ID, "attempt-3-error-text")
    assert pre.value_of_css_property("white-space") == "pre-wrap"
    assert "monospace" in pre.value_of_css_property("font-family").lower() or "mono" in \
        pre.value_of_css_property("font-family").lower()
    assert driver.execute_script("return arguments[0].textContent", pre) == made["first"]  # whole
    scroll = driver.execute_script("return [arguments[0].scrollHeight, arguments[0].clientHeight, "
                                   "arguments[0].scrollWidth, arguments[0].clientWidth]", pre)
    assert scroll[0] > 10 * scroll[1] and scroll[1] < 500  # its own scroll, a bounded box
    assert scroll[2] <= scroll[3]  # wrapped, the 300-character token broken: no sideways scroll
    assert height(driver) - collapsed < 600  # the page grew by the box, not by the text
    assert horizontal_overflow(driver) == []
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    screenshot(driver, tmp_path, "dashboard-history-opened")

    # the end of the traceback is there to read, in the box
    driver.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", pre)
    assert "SMTPRecipientsRefused" in pre.text

    button = box.find_element(By.CSS_SELECTOR, "button.copy")
    assert button.is_displayed()
    button.click()
    wait.until(lambda d: button.text != "Copy")
    assert button.text == "Copied"
    copied = driver.execute_async_script(
        "const done = arguments[arguments.length - 1]; "
        "navigator.clipboard.readText().then(done, e => done('!' + e));")
    assert copied == made["first"]

    # a link of the attempts' table opens its text
    other = driver.find_element(By.ID, "attempt-1-error")
    assert other.get_attribute("open") is None
    driver.find_element(By.CSS_SELECTOR, "table.attempts a[href='#attempt-1-error']").click()
    wait.until(lambda d: other.get_attribute("open") is not None)
    assert driver.execute_script("return window.__blocked") == []  # nothing the policy refused


def test_the_past_lease_count_leads_to_the_stuck_items_and_their_workers(watched, served,
                                                                          tmp_path: Path) -> None:
    url, _, made = served
    driver, wait = watched, WebDriverWait(watched, WAIT_S)
    driver.get(url + "/")
    row = driver.find_element(By.CSS_SELECTOR, "tr[data-queue='SyncQueue']")
    assert "alarm" in row.get_attribute("class")
    row.find_element(By.CSS_SELECTOR, "a[title^='the items past their lease']").click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "h1").text == "SyncQueue: in Processing")
    summary = driver.find_element(By.CSS_SELECTOR, "p.summary").text
    assert "7 items in Processing, 4 past their lease" in summary

    items = driver.find_elements(By.CSS_SELECTOR, "table.held tbody tr")
    assert len(items) == 7
    assert [r.get_attribute("class") for r in items] == ["alarm"] * 4 + [""] * 3
    first = items[0].find_elements(By.TAG_NAME, "td")
    assert first[1].text == "12m00s past" and first[2].text == "sync-7f3a9c/1"
    assert first[1].value_of_css_property("color") == "rgba(180, 35, 24, 1)"  # red (--red)
    assert items[3].find_elements(By.TAG_NAME, "td")[1].text == "30s past"
    assert items[-1].find_elements(By.TAG_NAME, "td")[1].text == "ends in 4m00s"

    workers = driver.find_elements(By.CSS_SELECTOR, "table.holders tbody tr")
    assert [w.get_attribute("data-worker") for w in workers] == ["sync-7f3a9c/1", "sync-7f3a9c/2",
                                                                 "sync-b21e04/1"]
    cells = [c.text for c in workers[0].find_elements(By.CSS_SELECTOR, "th, td")]
    assert cells[:4] == ["sync-7f3a9c/1", "3", "12m00s past", "3"]
    assert horizontal_overflow(driver) == []
    screenshot(driver, tmp_path, "dashboard-stuck")

    items[0].find_element(By.TAG_NAME, "a").click()  # to the item the dead worker held
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "dl.fields"))
    assert iso(made["dead"][0]).replace("T", " ") in driver.find_element(By.TAG_NAME, "h1").text
    assert driver.execute_script("return window.__blocked") == []

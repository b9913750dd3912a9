"""guard.py's headers and the narrow layout in headless Chromium: a page of another origin that
frames an item page gets an empty, refused frame (and no click reaches the item's controls); the
pages run under the strict policy with no violation (the script refreshes, the stylesheet and the
chart's presentation attributes apply); at 400 px the overview's alarm columns stay on screen and
a refusal shows in its own box. Screenshots go to RELQ_SCREENSHOTS when it is set."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from relq.dashboard import serve
from relq.dashboard.app import Settings, create_app
from tests.browser import screenshot
from tests.dashboard.fake_store import NOW, FakeStore
from tests.dashboard.serving import port_of, running
from tests.dashboard.test_browser import half_an_hour

WAIT_S = 15
# Installed before any page script runs (DevTools, not the page: the policy does not apply to it):
# every CSP violation the page meets, kept for the test to read.
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__violations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


@pytest.fixture
def served() -> Iterator[tuple[str, FakeStore]]:
    """A dashboard with actions allowed, as serve.py serves it."""
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    store.login_name = "relq_ops"
    store.add("Notification", 12, "Pending")  # due an hour ago: an old due item
    store.add("Notification", 3, "Processing")
    store.add("Notification", 2, "Failed", error="SMTP 550 5.1.1 mailbox unavailable")
    store.add("SyncQueue", 40, "Completed", type="CustomerSync")
    store.add("SyncQueue", 5, "Error", type="InventorySync", error="HTTP 503 from the warehouse API",
              ScheduledFor=NOW + timedelta(minutes=5))
    app = create_app(store, Settings(allow_actions=True, refresh_s=1.0), history=half_an_hour())
    with running(uvicorn.Config(app, **serve.server_options("127.0.0.1", 0))) as server:
        yield f"http://127.0.0.1:{port_of(server)}", store


@pytest.fixture
def attacker(served) -> Iterator[str]:
    """A page on another origin (another port, and named localhost) that frames a Failed item's page
    over a bait of its own, and a frame of its own origin beside it, which renders."""
    url, store = served
    key = next(r["EnqueuedAt"] for r in store.items_by_queue["Notification"] if r["Status"] == "Failed")
    target = f"{url}/queues/Notification/items/{key.isoformat(timespec='microseconds')}"

    def page(request: Any) -> HTMLResponse:
        return HTMLResponse(f"""<!doctype html><title>Win a prize</title>
<h1>Click the button to win</h1>
<iframe id="victim" src="{target}" width="900" height="420"></iframe>
<iframe id="own" src="/own" width="300" height="120"></iframe>""")

    def own(request: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><p id='hello'>a frame of this origin</p>")

    app = Starlette(routes=[Route("/", page), Route("/own", own)])
    with running(uvicorn.Config(app, **serve.server_options("127.0.0.1", 0))) as server:
        yield f"http://localhost:{port_of(server)}/"


def test_a_page_of_another_origin_cannot_frame_the_dashboard(chromium, served, attacker,
                                                              tmp_path: Path) -> None:
    _, store = served
    chromium.get(attacker)
    wait = WebDriverWait(chromium, WAIT_S)
    # the control: a frame of the page's own origin renders
    chromium.switch_to.frame(chromium.find_element(By.ID, "own"))
    wait.until(lambda d: d.find_elements(By.ID, "hello"))
    chromium.switch_to.default_content()
    # the dashboard's frame: Chromium refuses to render it (frame-ancestors 'none', X-Frame-Options DENY)
    victim = chromium.find_element(By.ID, "victim")
    time.sleep(1.0)  # give the refused frame the time a rendered one takes
    chromium.switch_to.frame(victim)
    try:
        shown = chromium.execute_script("return [document.URL, document.body ? document.body.innerText : '']")
        assert chromium.find_elements(By.CSS_SELECTOR, "form, button, table") == []
    finally:
        chromium.switch_to.default_content()
    # not the dashboard's document but Chromium's own error page: "127.0.0.1 refused to connect."
    assert shown[0] == "chrome-error://chromewebdata/" and "refused to connect" in shown[1], shown
    assert "Retry" not in shown[1] and "Notification" not in shown[1]
    # from the page around it, the frame's document cannot be reached either
    assert chromium.execute_script("return document.getElementById('victim').contentDocument") is None
    # a click where the Retry button would be lands on nothing of the dashboard's
    victim.click()
    assert store.acted == []
    screenshot(chromium, tmp_path, "guard-framing-refused")


def test_the_pages_run_under_the_policy_without_a_violation(chromium, served, tmp_path: Path) -> None:
    url, store = served
    wait = WebDriverWait(chromium, WAIT_S)
    script = chromium.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_VIOLATIONS})
    try:
        chromium.get(url + "/")
        # the stylesheet applies (style-src 'self'), and the chart's presentation attributes too
        assert chromium.execute_script(
            "return getComputedStyle(document.querySelector('.scroll')).borderTopStyle") == "solid"
        anchor = chromium.execute_script(
            "return getComputedStyle(document.querySelector('svg.chart text[text-anchor=end]')).textAnchor")
        assert anchor == "end"
        # the live refresh runs (script-src 'self', connect-src 'self')
        store.add("Notification", 30, "Pending")
        wait.until(lambda d: ">42<" in d.find_element(By.ID, "overview").get_attribute("innerHTML"))
        assert chromium.execute_script("return window.__violations") == []
        chromium.get(url + "/queues/Notification?status=Failed")
        chromium.find_elements(By.CSS_SELECTOR, "table.items tbody tr a")[0].click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.retry"))
        chromium.find_element(By.CSS_SELECTOR, "button.retry").click()  # form-action 'self', then a redirect
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "p.message"))
        assert chromium.execute_script("return window.__violations") == []
    finally:
        chromium.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument",
                                 {"identifier": script["identifier"]})


def narrow(driver: Any, folder: Path, name: str) -> Path:
    target = Path(os.environ.get("RELQ_SCREENSHOTS") or folder)
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


ON_SCREEN = """
const width = document.documentElement.clientWidth;
const head = [...document.querySelectorAll('table.overview thead th')].map(th => th.textContent.trim());
const out = {width: width, pageScroll: document.documentElement.scrollWidth, head: head, cells: []};
for (const row of document.querySelectorAll('table.overview tbody tr')) {
  for (const name of ['queue', 'past lease', 'oldest due, age', 'failed/min']) {
    const cell = row.children[head.indexOf(name)];
    const box = cell.getBoundingClientRect();
    out.cells.push([row.dataset.queue, name, cell.textContent.trim(), box.left, box.right]);
  }
}
return out;
"""


def test_at_400_px_the_alarm_columns_stay_on_screen(chromium, served, tmp_path: Path) -> None:
    url, store = served
    chromium.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                             {"width": 400, "height": 860, "deviceScaleFactor": 1, "mobile": True})
    try:
        chromium.get(url + "/")
        seen = chromium.execute_script(ON_SCREEN)
        assert seen["width"] == 400
        assert seen["pageScroll"] <= seen["width"]  # the page does not scroll sideways; the table may
        assert len(seen["cells"]) == 8  # two queues, four columns each
        for queue, column, _, left, right in seen["cells"]:
            assert left >= 0 and right <= seen["width"], (queue, column, left, right)
        notification = {column: text for queue, column, text, _, _ in seen["cells"]
                        if queue == "Notification"}
        assert notification["oldest due, age"] == "59m59s" and notification["failed/min"] == "0.1"
        row = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification']")
        assert "alarm" in row.get_attribute("class")
        narrow(chromium, tmp_path, "guard-overview-400px")
        # scrolled to its far end, the queue's name stays in place
        chromium.execute_script("document.querySelector('#overview .scroll').scrollLeft = 10000")
        name = chromium.find_element(By.CSS_SELECTOR, "tr[data-queue='Notification'] th")
        assert name.rect["x"] >= 0 and name.rect["x"] + name.rect["width"] <= 400
        narrow(chromium, tmp_path, "guard-overview-400px-scrolled")

        # a refusal at 400 px: its own box, not the green one
        key = next(r["EnqueuedAt"] for r in store.items_by_queue["Notification"] if r["Status"] == "Pending")
        chromium.get(f"{url}/queues/Notification/items/{key.isoformat(timespec='microseconds')}")
        store.changed_behind.add(key)
        chromium.find_element(By.CSS_SELECTOR, "button.cancel").click()
        WebDriverWait(chromium, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "p.refusal"))
        box = chromium.find_element(By.CSS_SELECTOR, "p.refusal")
        assert box.get_attribute("role") == "alert"
        assert chromium.find_elements(By.CSS_SELECTOR, "p.message") == []
        assert box.text.startswith("Not done. Cancel refused: the item changed since you looked")
        assert box.value_of_css_property("border-left-width") == "6px"
        assert box.value_of_css_property("background-color") != "rgba(227, 245, 232, 1)"  # not the green box
        narrow(chromium, tmp_path, "guard-refusal-400px")
    finally:
        chromium.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

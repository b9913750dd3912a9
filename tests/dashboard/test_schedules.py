"""The schedules' page, offline, against a store that answers as dbo.QueueSchedule_V does
(tests/dashboard/fake_store.py): every schedule with its cadence and slots, a late one marked
by the server's clock, the grant it needs, the link from every page's header, the batch the
store sends; and the page in headless Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from relq.dashboard.app import Settings, create_app
from relq.dashboard.schedules import LATE_S
from relq.dashboard.store import SCHEDULES, SqlStore
from relq.schedules import LIST_SQL
from tests.browser import screenshot
from tests.dashboard.fake_store import NOW, FakeStore
from tests.dashboard.serving import serving
from tests.test_db import FakeCursor

COLUMNS = ("Name", "Queue", "Type", "Payload", "EntityKey", "Priority", "GroupKey", "CronExpr",
           "IntervalSeconds", "Misfire", "CatchUpMax", "NextSlotAt", "LastSlotAt", "LastEnqueuedAt",
           "PausedAt", "PausedBy", "CreatedAt", "CreatedBy")


def row(name: str, next_slot: datetime, *, cron: str | None = None, every: int | None = None,
        paused: datetime | None = None, catch_up: int | None = None) -> dict:
    return dict(zip(COLUMNS, (
        name, "SyncQueue", "CustomerSync", None, name, 0, None, cron, every,
        "Skip" if catch_up is None else "CatchUp", catch_up, next_slot, next_slot - timedelta(hours=1), None,
        paused, "ann" if paused else None, NOW - timedelta(days=3), "ann"), strict=True))


def listed(html: str) -> list[str]:
    return re.findall(r'<tr data-schedule="([^"]+)"', html)


@pytest.fixture
def monitor() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor")


def test_every_schedule_is_listed_by_name_with_its_cadence_and_slots(monitor: FakeStore) -> None:
    monitor.schedule_rows = [row("nightly", NOW + timedelta(hours=5), cron="0 3 * * *"),
                             row("every-minute", NOW + timedelta(seconds=20), every=60, catch_up=5)]

    page = TestClient(create_app(monitor, Settings())).get("/schedules")

    assert page.status_code == 200
    assert listed(page.text) == ["every-minute", "nightly"]
    assert "<code>cron 0 3 * * *</code>" in page.text and "<code>every 60 s</code>" in page.text
    assert "catch up 5" in page.text and "skip" in page.text
    assert "late" not in page.text  # both slots are ahead of the server's clock


def test_a_slot_unfired_past_the_grace_is_late_by_the_servers_clock_unless_paused(monitor: FakeStore) -> None:
    monitor.schedule_rows = [row("stuck", NOW - timedelta(seconds=LATE_S + 65), every=30),
                             row("just-due", NOW - timedelta(seconds=LATE_S - 1), every=30),
                             row("paused", NOW - timedelta(hours=2), every=30,
                                 paused=NOW - timedelta(hours=3))]

    page = TestClient(create_app(monitor, Settings())).get("/schedules")

    assert re.findall(r'<tr data-schedule="([^"]+)" class="alarm"', page.text) == ["stuck"]
    assert "late by 2m05s" in page.text
    assert '<div class="refusal" role="alert"><strong>1 late:</strong>' in page.text
    assert "by ann" in page.text  # who paused the paused one


def test_the_page_says_which_role_is_missing_when_the_login_cannot_read_the_view() -> None:
    page = TestClient(create_app(FakeStore.with_roles("QueueAdmin"), Settings())).get("/schedules")

    assert page.status_code == 403
    assert "the schedules needs the role QueueMonitor" in page.text


def test_every_page_links_to_the_schedules(monitor: FakeStore) -> None:
    page = TestClient(create_app(monitor, Settings())).get("/")

    assert '<a class="schedules" href="http://testserver/schedules">schedules</a>' in page.text


def test_the_store_reads_the_servers_clock_and_the_schedules_in_one_batch() -> None:
    server_now = datetime(2026, 11, 28, 12, 0)
    one = row("nightly", server_now, cron="0 3 * * *")
    cursor = FakeCursor([(["Now"], [(server_now,)]), (list(COLUMNS), [tuple(one.values())])])

    class Conn:
        def cursor(self):
            return cursor

        def close(self):
            pass

    now, rows = SqlStore(Conn).schedules()

    assert cursor.executed == (SCHEDULES, ())
    assert SCHEDULES.startswith("SELECT SYSUTCDATETIME() AS [Now]; ") and SCHEDULES.endswith(LIST_SQL)
    assert now == server_now and rows == [one]


# -- in headless Chromium --------------------------------------------------------------------

@pytest.fixture
def served() -> Iterator[str]:
    """A read-only dashboard over three schedules: one on time, one late, one paused."""
    store = FakeStore.with_roles("QueueMonitor")
    store.schedule_rows = [row("nightly-export", NOW + timedelta(hours=5), cron="0 3 * * *"),
                           row("price-refresh", NOW - timedelta(minutes=12), every=300, catch_up=3),
                           row("newsletter", NOW - timedelta(days=1), cron="0 8 * * 1",
                               paused=NOW - timedelta(days=2))]
    with serving(create_app(store, Settings())) as url:
        yield url


def test_schedules_show_a_late_one_in_chromium(chromium, served: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    chromium.get_log("browser")  # what earlier pages of this browser logged is theirs
    chromium.get(f"{served}/schedules")
    rows = chromium.find_elements(By.CSS_SELECTOR, "tr[data-schedule]")
    names = [r.get_attribute("data-schedule") for r in rows]
    assert names == ["newsletter", "nightly-export", "price-refresh"]
    alert = chromium.find_element(By.CSS_SELECTOR, "[role=alert]")
    assert alert.is_displayed() and alert.text.startswith("1 late:")
    late = chromium.find_element(By.CSS_SELECTOR, 'tr[data-schedule="price-refresh"] strong.late')
    assert late.is_displayed() and late.text == "late by 12m00s"
    refused = [e for e in chromium.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    assert refused == []
    screenshot(chromium, tmp_path, "schedules")

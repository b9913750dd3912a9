"""The batches' page, offline, against a store that answers as dbo.QueueBatch_V does
(tests/dashboard/fake_store.py): the running batches and the newest ones with their progress,
the grant it needs, the link from every page's header, the SQL the store sends; and the page
in headless Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from relq.batches import COLUMNS
from relq.dashboard.app import Settings, create_app
from relq.dashboard.batches import SHOWN
from relq.dashboard.store import BATCHES, SqlStore
from tests.browser import screenshot
from tests.dashboard.fake_store import FakeStore
from tests.dashboard.serving import serving
from tests.test_db import FakeCursor

T0 = datetime(2026, 11, 26, 9, 0, 0)


def row(batch_id: int, state: str, total: int, completed: int, failed: int = 0, name: str | None = None,
        callback: bool = False) -> dict:
    done = completed + failed
    return dict(zip(COLUMNS, (
        batch_id, name, state, total, completed, 0, failed, 0, 0, done, total - done,
        "SyncQueue", "ImportDone",
        T0, T0 + timedelta(minutes=1) if state != "Open" else None,
        T0 + timedelta(minutes=2) if callback else None, T0 + timedelta(minutes=2) if callback else None),
        strict=True))


def shown(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr data-batch="(\d+)"', html)]


@pytest.fixture
def monitor() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor")


def test_the_batches_are_listed_newest_first_with_their_progress(monitor: FakeStore) -> None:
    monitor.batch_rows = [row(1, "Finished", 4, 3, 1, callback=True),
                          row(2, "Sealed", 10, 4, 1, name="import 2"), row(3, "Open", 2, 0)]

    page = TestClient(create_app(monitor, Settings())).get("/batches")

    assert page.status_code == 200
    assert shown(page.text) == [3, 2, 1]
    assert '<progress max="100" value="50" title="5 of 10 finished">' in page.text
    assert "import 2" in page.text and "ImportDone in SyncQueue" in page.text
    assert "2 running" in page.text
    assert monitor.batch_reads == [SHOWN]


def test_a_running_batch_is_listed_however_many_newer_ones_finished(monitor: FakeStore) -> None:
    monitor.batch_rows = [row(1, "Sealed", 5, 1)] + [
        row(n, "Finished", 1, 1, callback=True) for n in range(2, SHOWN + 10)]

    listed = shown(TestClient(create_app(monitor, Settings())).get("/batches").text)

    assert listed[-1] == 1 and len(listed) == SHOWN + 1


def test_the_page_says_which_role_is_missing_when_the_login_cannot_read_the_view() -> None:
    page = TestClient(create_app(FakeStore.with_roles("QueueAdmin"), Settings())).get("/batches")

    assert page.status_code == 403
    assert "the batches needs the role QueueMonitor" in page.text


def test_every_page_links_to_the_batches(monitor: FakeStore) -> None:
    page = TestClient(create_app(monitor, Settings())).get("/")

    assert '<a class="batches" href="http://testserver/batches">batches</a>' in page.text


def test_the_store_reads_the_running_batches_then_the_newest_each_once() -> None:
    running = [tuple(row(1, "Sealed", 5, 1).values())]
    newest = [tuple(row(3, "Finished", 1, 1, callback=True).values()), tuple(row(1, "Sealed", 5, 1).values())]
    cursors = [FakeCursor([(list(COLUMNS), running)]), FakeCursor([(list(COLUMNS), newest)])]
    sent = list(cursors)

    class Conn:  # one connection; each read takes a cursor of its own
        def cursor(self):
            return cursors.pop(0)

        def close(self):
            pass

    store = SqlStore(Conn)

    rows = store.batches(7)

    assert [r["BatchID"] for r in rows] == [3, 1]
    assert sent[0].executed == (BATCHES, (7,))
    assert "WHERE v.CallbackEnqueuedAt IS NULL ORDER BY v.BatchID DESC" in sent[0].executed[0]
    assert "ORDER BY v.BatchID DESC" in sent[1].executed[0] and sent[1].executed[1] == (7,)


# -- in headless Chromium --------------------------------------------------------------------

@pytest.fixture
def served() -> Iterator[str]:
    """A read-only dashboard over four batches at every stage, one of them with failures."""
    store = FakeStore.with_roles("QueueMonitor")
    store.batch_rows = [row(1, "Finished", 400, 390, 10, name="nightly import 25 Nov", callback=True),
                        row(2, "Reopened", 12, 11, name="price update", callback=True),
                        row(3, "Sealed", 10_000, 6_250, 31, name="nightly import 26 Nov"),
                        row(4, "Open", 120, 0, name="welcome e-mails")]
    with serving(create_app(store, Settings())) as url:
        yield url


def test_batches_show_their_progress_in_chromium(chromium, served: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    chromium.get(f"{served}/batches")
    rows = chromium.find_elements(By.CSS_SELECTOR, "tr[data-batch]")
    assert [r.get_attribute("data-batch") for r in rows] == ["4", "3", "2", "1"]
    bar = chromium.find_element(By.CSS_SELECTOR, 'tr[data-batch="3"] progress')
    assert bar.is_displayed() and bar.get_attribute("value") == "62"
    # the page's policy allows no inline style or script: nothing was refused
    refused = [e for e in chromium.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    assert refused == []
    screenshot(chromium, tmp_path, "batches")

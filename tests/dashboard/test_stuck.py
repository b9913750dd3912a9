"""Stuck work (relq/dashboard/stuck.py), offline: a queue's items in Processing, those longest past
their lease first, with their worker, lease and how long past it; who holds what; the overview's
links to it; its reads, as SQL (the lease index's filter and order, bounded) and run on SQLite
against the in-memory store (tests/dashboard/fake_store.py), page by page."""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from relq import db
from relq.dashboard import stuck
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import HELD, LEASE_FILTER, LeasePlace, SqlStore, holders_sql, processing_sql
from tests.dashboard.fake_store import NOW, T0, FakeStore

REPO = Path(__file__).resolve().parents[2]
MIN = timedelta(minutes=1)


def client(store: FakeStore) -> TestClient:
    return TestClient(create_app(store, Settings()), follow_redirects=False)


def iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def rows(html: str, table: str) -> list[str]:
    """The text of each body row of ``table`` (its class)."""
    body = re.search(rf'<table class="{table}">.*?<tbody>(.*?)</tbody>', html, re.S)[1]
    return [text(r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


@pytest.fixture
def admin() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor", "QueueAdmin")


def a_night(store: FakeStore) -> dict[str, list[datetime]]:
    """SyncQueue at 10:00: sync-a's slot 1 died 10 minutes ago holding two items; slot 2 works, one
    item past its lease by a second, one in time; sync-b holds one item in time; other states."""
    store.add("SyncQueue", 3, "Pending", type="CustomerSync")
    keys = {
        "dead": store.hold("SyncQueue", "sync-a/1", [-10 * MIN, -9 * MIN], type="CustomerSync"),
        "late": store.hold("SyncQueue", "sync-a/2", [timedelta(seconds=-1), 4 * MIN], type="InventorySync"),
        "fine": store.hold("SyncQueue", "sync-b/1", [2 * MIN], type="CustomerSync", Step="Send",
                           AttemptNum=3),
    }
    store.add("SyncQueue", 2, "Completed", type="CustomerSync", LockedBy="sync-a/1")
    return keys


# -- the page ---------------------------------------------------------------------------------------


def test_the_items_come_longest_past_their_lease_first_with_worker_lease_and_how_long(admin) -> None:
    keys = a_night(admin)
    page = client(admin).get("/queues/SyncQueue/processing")
    assert page.status_code == 200, page.text
    listed = rows(page.text, "held")
    assert [row.split(" ")[0:2] for row in listed] == [  # the key (date and time), in lease order
        iso(k).split("T") for k in (keys["dead"][0], keys["dead"][1], keys["late"][0], keys["fine"][0],
                                    keys["late"][1])]
    # each: its key (a link to the item), how long past its lease (or until it ends) and its worker
    # first, then its type, attempt, step, claim, how long held, and the lease's end
    assert listed[0].endswith(" 10m00s past sync-a/1 CustomerSync 1 2026-11-26 09:45:00.000000 15m00s "
                              "2026-11-26 09:50:00.000000")
    assert listed[2].endswith(" 1s past sync-a/2 InventorySync 1 2026-11-26 09:54:59.000000 5m01s "
                              "2026-11-26 09:59:59.000000")
    assert listed[3].endswith(" ends in 2m00s sync-b/1 CustomerSync 3 Send 2026-11-26 09:57:00.000000 3m00s "
                              "2026-11-26 10:02:00.000000")
    assert " ends in 4m00s " in listed[4]
    # the past ones are the alarm rows, and each key links to its item's page
    body = page.text[page.text.index('<table class="held">'):]
    assert [c for c in re.findall(r'<tr class="([^"]*)">', body)][:5] == ["alarm"] * 3 + [""] * 2
    assert f'/queues/SyncQueue/items/{iso(keys["dead"][0])}"' in page.text
    # the summary: QueueHealth_V's counts, the same past-lease figure
    assert "5 items in Processing, 3 past their lease" in text(page.text)
    assert "Pending" not in "".join(listed) and "Completed" not in "".join(listed)


def test_who_holds_what_counts_each_workers_items_leases_and_since_when(admin) -> None:
    a_night(admin)
    admin.hold("SyncQueue", None, [30 * MIN])  # an item in Processing that names no worker
    page = client(admin).get("/queues/SyncQueue/processing")
    assert rows(page.text, "holders") == [
        # worker, past lease, how long past its oldest lease, items, holding since (its earliest
        # claim), for how long, its oldest lease
        "sync-a/1 2 10m00s past 2 2026-11-26 09:45:00.000000 15m00s 2026-11-26 09:50:00.000000",
        "sync-a/2 1 1s past 2 2026-11-26 09:54:59.000000 5m01s 2026-11-26 09:59:59.000000",
        "sync-b/1 0 ends in 2m00s 1 2026-11-26 09:57:00.000000 3m00s 2026-11-26 10:02:00.000000",
        "nobody (LockedBy NULL) 0 ends in 30m00s 1 2026-11-26 10:25:00.000000 0s 2026-11-26 10:30:00.000000",
    ]
    assert re.findall(r'<tr class="([^"]*)" data-worker="([^"]*)">', page.text) == [
        ("alarm", "sync-a/1"), ("alarm", "sync-a/2"), ("", "sync-b/1"), ("", "")]
    assert "Counted over the first" not in page.text  # every item was counted


def test_a_queue_with_nothing_in_processing_says_so(admin) -> None:
    admin.add("Notification", 2, "Pending")
    page = client(admin).get("/queues/Notification/processing")
    assert page.status_code == 200
    assert "No worker holds an item of Notification." in page.text
    assert "No Notification item is in Processing." in page.text
    assert "0 items in Processing, 0 past their lease" in text(page.text)


def test_the_workers_view_says_when_it_counted_only_the_first_items(admin, monkeypatch) -> None:
    admin.hold("SyncQueue", "w/1", [n * MIN for n in range(1, 5)])
    monkeypatch.setattr(stuck, "HOLDERS_CAP", 3)
    page = client(admin).get("/queues/SyncQueue/processing")
    assert rows(page.text, "holders")[0].startswith("w/1 0 ends in 1m00s 3 ")
    assert "Counted over the first 3 items in lease order, not all 4." in text(page.text)
    assert ("holders", "SyncQueue", 3) in admin.stuck_reads


def test_pages_follow_the_lease_order_items_without_a_lease_first(admin, monkeypatch) -> None:
    """Processing items always carry a lease (a claim sets it); one without is listed first, as
    ORDER BY ... ASC puts NULL, and the pages go on past it."""
    monkeypatch.setattr(stuck, "PAGE", 2)
    leases = [None, -3 * MIN, None, 5 * MIN, -3 * MIN, 1 * MIN, None]
    keys = [admin.hold("SyncQueue", f"w/{n}", [lease])[0] for n, lease in enumerate(leases)]
    expected = sorted(zip(leases, keys, strict=True),
                      key=lambda p: (p[0] is not None, p[0] or timedelta(0), p[1]))
    app, url, seen = client(admin), "/queues/SyncQueue/processing", []
    for n in range(10):
        page = app.get(url)
        assert page.status_code == 200
        assert ("First page" in page.text) == (n > 0)
        seen += re.findall(r'<a href="[^"]*/items/([^"]+)">', page.text[page.text.index('class="held"'):])
        found = re.search(r'<a rel="next" href="([^"]+)">', page.text)
        if not found:
            break
        url = found[1].replace("&amp;", "&")
    assert seen == [iso(k) for _, k in expected]
    assert [after for method, _, after in admin.stuck_reads if method == "processing"][1:] == [
        LeasePlace(None, expected[1][1]), LeasePlace(NOW - 3 * MIN, expected[3][1]),
        LeasePlace(NOW + MIN, expected[5][1])]


def test_what_cannot_be_read_is_refused_in_one_line(admin) -> None:
    app = client(admin)
    assert app.get("/queues/Nope/processing").status_code == 404
    bad = app.get("/queues/SyncQueue/processing?after=yesterday")
    assert bad.status_code == 400 and "after must be a date and time" in bad.text
    alone = app.get(f"/queues/SyncQueue/processing?lease={iso(NOW)}")
    assert alone.status_code == 400 and "give both" in alone.text


def test_a_monitor_is_told_it_needs_queue_admin_and_nothing_is_read() -> None:
    monitor = FakeStore.with_roles("QueueMonitor")
    monitor.hold("SyncQueue", "w/1", [-MIN])
    page = client(monitor).get("/queues/SyncQueue/processing")
    assert page.status_code == 403
    assert "needs the role QueueAdmin" in page.text and "dbo.Worker_SyncQueue_V" in page.text
    assert "dbo.QueueAttempt_V" not in page.text  # the page reads no attempt
    assert monitor.stuck_reads == []


def test_the_overview_links_its_past_lease_and_processing_counts_to_the_page(admin) -> None:
    a_night(admin)
    admin.hold("Notification", "mail-1/1", [MIN])
    page = client(admin).get("/")
    sync = re.search(r'data-queue="SyncQueue">(.*?)</tr>', page.text, re.S)[1]
    links = re.findall(r'<a href="([^"]+)"[^>]*>(\d+)</a>', sync)
    assert ("http://testserver/queues/SyncQueue/processing", "3") in links  # past lease
    assert ("http://testserver/queues/SyncQueue/processing", "5") in links  # processing
    assert ("http://testserver/queues/SyncQueue?status=Pending", "3") in links  # the others as before
    notification = re.search(r'data-queue="Notification">(.*?)</tr>', page.text, re.S)[1]
    cells = re.findall(r'<td class="n">(.*?)</td>', notification)
    assert cells[0] == "0"  # no item past its lease: no link
    assert "/queues/Notification/processing" in notification  # its one item in Processing


# -- the figures -------------------------------------------------------------------------------------


def test_a_lease_is_past_only_once_the_databases_clock_is_beyond_it() -> None:
    assert stuck.Lease.at(NOW, NOW) == stuck.Lease(NOW, False, 0)  # QueueHealth_V: LeaseUntil < now
    assert stuck.Lease.at(NOW - timedelta(microseconds=1), NOW).past
    assert stuck.Lease.at(NOW - timedelta(seconds=61.9), NOW).by_s == 61
    soon = NOW + timedelta(seconds=30)
    assert stuck.Lease.at(soon, NOW) == stuck.Lease(soon, False, 30)
    assert stuck.Lease.at(None, NOW) == stuck.Lease(None, False, None)
    [item] = stuck.held([{"EnqueuedAt": T0, "StartedAt": None, "LeaseUntil": None, "ReadAt": NOW}])
    assert item.held_s is None and "ReadAt" not in item.row


# -- the reads ----------------------------------------------------------------------------------------


def lease_index(queue: str) -> tuple[str, str]:
    """The key and filter of IX_<queue>_Lease, as the queue's table file (rendered) creates it."""
    sql = (REPO / "database" / "tables" / f"dbo.{queue}.sql").read_text()
    found = re.search(rf"CREATE NONCLUSTERED INDEX IX_{queue}_Lease\s+ON dbo\.{queue} \((\w+)\)"
                      r"\s+INCLUDE \(([^)]*)\)\s+WHERE \((.*?)\);", sql)
    assert found, f"IX_{queue}_Lease is not in dbo.{queue}.sql"
    return found[1], found[3]


@pytest.mark.parametrize("queue", ["Notification", "SyncQueue"])
def test_each_read_is_a_bounded_read_of_the_lease_index_through_the_worker_view(queue: str) -> None:
    key, index_filter = lease_index(queue)
    assert LEASE_FILTER == index_filter == "[Status] = 'Processing'"  # stated word for word
    after = LeasePlace(NOW, T0)
    for sql, _ in (processing_sql(queue, None, 101), processing_sql(queue, after, 101),
                   processing_sql(queue, LeasePlace(None, T0), 101), holders_sql(queue, 1000)):
        assert f"FROM dbo.Worker_{queue}_V WHERE {LEASE_FILTER}" in sql  # the view, never the table
        assert re.search(r"SELECT TOP \((101|1000)\) ", sql)  # bounded
        assert f"ORDER BY {key} ASC, EnqueuedAt ASC" in sql  # the index's order: no sort
        assert sql.endswith(" OPTION (RECOMPILE);")  # no forced parameterization of the filter
        assert f"dbo.{queue} " not in sql and "OFFSET" not in sql
    sql, params = processing_sql(queue, after, 101)
    # the page past a row seeks to it: the row's lease and a later key, or a later lease
    assert ("((LeaseUntil = CAST(? AS DATETIME2(7)) AND EnqueuedAt > CAST(? AS DATETIME2(7))) "
            "OR LeaseUntil > CAST(? AS DATETIME2(7)))") in sql
    assert params == [NOW, T0, NOW]
    assert processing_sql(queue, LeasePlace(None, T0), 5)[1] == [T0]


class SqliteCursor:
    """The worker view as a SQLite table, read with processing_sql's and holders_sql's SQL in
    SQLite's dialect: casts dropped (times are ISO text, compared as text), TOP as LIMIT (in the
    CTE too), SYSUTCDATETIME() as the fake's clock, no query hint; times come back as datetimes."""

    def __init__(self, conn: sqlite3.Connection, now: datetime) -> None:
        self.conn, self.now, self.cursor = conn, now, None

    def dialect(self, sql: str) -> str:
        sql = re.sub(r"CAST\(\? AS \w+(?:\(\d+\))?\)", "?", sql)
        sql = sql.replace("SYSUTCDATETIME()", f"'{db.sql_value(self.now)}'")
        sql = sql.replace(" OPTION (RECOMPILE)", "")
        sql = re.sub(r"\(SELECT TOP \((\d+)\) (.*?)\) SELECT", r"(SELECT \2 LIMIT \1) SELECT", sql)
        return re.sub(r"^SELECT TOP \((\d+)\) (.*);$", r"SELECT \2 LIMIT \1;", sql)

    def execute(self, sql: str, *params: Any) -> None:
        self.cursor = self.conn.execute(self.dialect(sql), params)

    @property
    def description(self) -> Any:
        return self.cursor.description

    def fetchall(self) -> list[tuple]:
        times = ("EnqueuedAt", "StartedAt", "LeaseUntil", "ReadAt", "HeldSince", "OldestLease")
        names = [d[0] for d in self.cursor.description]
        return [tuple(datetime.fromisoformat(v) if n in times and v else v
                      for n, v in zip(names, row, strict=True)) for row in self.cursor.fetchall()]

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        pass


class Connection:
    def __init__(self, cursor: SqliteCursor) -> None:
        self._cursor = cursor

    def cursor(self) -> SqliteCursor:
        return self._cursor


def sqlite_store(fake: FakeStore, queue: str) -> SqlStore:
    columns = (*HELD, "Status")
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("ATTACH DATABASE ':memory:' AS dbo;")
    conn.execute(f"CREATE TABLE dbo.Worker_{queue}_V ({', '.join(columns)});")
    conn.executemany(f"INSERT INTO dbo.Worker_{queue}_V VALUES ({', '.join('?' * len(columns))});",
                     [tuple(db.sql_value(r.get(c)) for c in columns) for r in fake.items_by_queue[queue]])
    return SqlStore(lambda: Connection(SqliteCursor(conn, NOW)))


def shuffled_night() -> FakeStore:
    """Thirty items in Processing among others, their leases out of key order, with ties and
    a few without a lease, held by five workers and one that names none."""
    fake = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    for n in range(30):
        lease = None if n % 11 == 4 else timedelta(seconds=((n * 7) % 13 - 6) * 30)
        fake.hold("SyncQueue", None if n == 17 else f"w{n % 5}/1", [lease], type="CustomerSync")
        fake.add("SyncQueue", 1, ("Pending", "Completed", "Error")[n % 3], type="CustomerSync",
                 LockedBy=f"w{n % 5}/1", LeaseUntil=NOW - MIN)
    return fake


@pytest.mark.parametrize("size", [1, 4, 7, 100])
def test_the_sql_and_the_in_memory_store_give_the_same_pages_and_workers(size: int) -> None:
    fake = shuffled_night()
    sql = sqlite_store(fake, "SyncQueue")
    walked = []
    for store in (sql, fake):
        pages, after = [], None
        while len(pages) < 40:
            page = stuck.read(store, "SyncQueue", after, size, cap=12)
            pages.append([(h.row["EnqueuedAt"], h.row["LockedBy"], h.lease, h.held_s) for h in page.items])
            if not page.later:
                break
            last = page.items[-1]
            after = LeasePlace(last.lease.until, last.row["EnqueuedAt"])
        walked.append((pages, page.holders, page.capped))
    assert walked[0] == walked[1]
    pages, holders, capped = walked[0]
    every = [item for page in pages for item in page]
    assert len(every) == len({k for k, *_ in every}) == 30  # each item once, none of another state
    assert all(len(page) == size for page in pages[:-1])
    leases = [lease for _, _, lease, _ in every]
    assert [lease.until for lease in leases[:3]] == [None, None, None]  # no lease first
    assert [lease.until for lease in leases[3:]] == sorted(lease.until for lease in leases[3:])
    assert capped and sum(h.items for h in holders) == 12  # the first 12 in lease order
    assert [h.oldest.until for h in holders][1:] == sorted(h.oldest.until for h in holders[1:])

"""The item lists' search, order, totals and pager, offline: the SQL list_sql and count_sql
send for each search and order (values only as parameters), the same pages from that SQL
(run on SQLite, as SqlStore runs it) and from the in-memory store, page by page in both
directions, the page's links and totals, and one browser session over them."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from starlette.testclient import TestClient

from relq import db
from relq.dashboard import items as items_page
from relq.dashboard.app import Settings, create_app
from relq.dashboard.items import COUNT_CAP, PAGE, read_page
from relq.dashboard.store import (
    FINISHED_FILTER,
    LISTED,
    SEARCHES,
    UNFINISHED_FILTER,
    Filter,
    SqlStore,
    count_sql,
    list_sql,
    reading_note,
    update_order_served,
)
from tests.browser import screenshot
from tests.dashboard.fake_store import T0, FakeStore
from tests.dashboard.serving import serving
from tests.test_db import FakeConnection, FakeCursor

KEY = datetime(2026, 11, 26, 9, 0, 0, 123456)
UPDATED = datetime(2026, 11, 26, 9, 30, 0, 654321)
HOSTILE = "x'); DROP TABLE dbo.Notification; --"


def iso(key: datetime) -> str:
    return key.isoformat(timespec="microseconds")


def shown_keys(html: str) -> list[str]:
    return re.findall(r"/items/([0-9T:.-]+)\"", html)


def link(html: str, text: str) -> str | None:
    found = re.search(rf'href="([^"]+)">{text}</a>', html)
    return found[1].replace("&amp;", "&") if found else None


# -- the SQL ------------------------------------------------------------------------------------


def test_a_dedup_key_search_is_an_exact_match_that_states_its_index_filter() -> None:
    sql, params = list_sql("Notification", Filter(dedup_key="reset:ann", after=KEY), 51)
    assert sql == ("SELECT TOP (51) [EnqueuedAt], [Type], [Status], [AttemptNum], [ScheduledFor], "
                   "[UpdatedAt], [Error] FROM dbo.Worker_Notification_V "
                   "WHERE [DedupKey] = CAST(? AS NVARCHAR(200)) AND [DedupKey] IS NOT NULL "
                   "AND EnqueuedAt < CAST(? AS DATETIME2(7)) ORDER BY EnqueuedAt DESC;")
    assert params == ["reset:ann", KEY]


@pytest.mark.parametrize("search", SEARCHES, ids=lambda s: s.field)
def test_every_search_casts_its_value_to_the_columns_type_and_never_writes_it_into_the_sql(search) -> None:
    value = HOSTILE[:search.length] if search.field != "phone_number" else "+358401234567"
    sql, params = list_sql("SyncQueue", Filter(status="Failed", **{search.field: value}), 10)
    assert f"[{search.column}] = CAST(? AS {search.sql_type})" in sql
    assert value not in sql and "DROP" not in sql
    assert params == ["Failed", value]
    # The searches whose index is filtered state the filter: the optimizer uses a filtered
    # index only for a predicate it can prove is a subset of it.
    assert (f"AND {search.index_filter}" in sql) == (search.index_filter is not None)
    counted, counted_params = count_sql("SyncQueue", Filter(status="Failed", **{search.field: value}), 10)
    assert f"[{search.column}] = CAST(? AS {search.sql_type})" in counted and counted_params == params


def test_the_search_types_are_the_columns_types() -> None:
    # database/types: EntityKey NVARCHAR(200), DedupKey NVARCHAR(200), GroupKey NVARCHAR(100),
    # Email NVARCHAR(254), PhoneNumber VARCHAR(16).
    types = {}
    for name in ("EntityKey", "DedupKey", "GroupKey", "Email", "PhoneNumber"):
        text = (Path(__file__).parents[2] / "database" / "types" / f"dbo.{name}.sql").read_text()
        types[name] = re.search(r"CREATE TYPE dbo\.\w+ FROM (\w+\(\d+\))", text)[1]
    by_column = {s.column: s for s in SEARCHES}
    for column, type_name in (("EntityKey", "EntityKey"), ("DedupKey", "DedupKey"), ("GroupKey", "GroupKey"),
                              ("EmailTo", "Email"), ("PhoneNumber", "PhoneNumber")):
        search = by_column[column]
        assert search.sql_type == types[type_name]
        assert search.length == int(re.search(r"\((\d+)\)", types[type_name])[1])


@pytest.mark.parametrize(("fields", "problem"), [
    ({"dedup_key": "d" * 201}, "the dedup key to search for has at most 200 characters"),
    ({"group_key": "g" * 101}, "the group key to search for has at most 100 characters"),
    ({"email_to": "a" * 250 + "@x.io"}, "the e-mail address to search for has at most 254 characters"),
    ({"phone_number": "+3584012345678901"}, "the phone number to search for has at most 16 characters"),
    ({"phone_number": "+358\uff1401234567"}, "the phone number to search for holds ASCII letters, digits"),
    ({"entity_key": ""}, "the entity key to search for is empty"),
    ({"type": "T" * 51}, "the type to list has at most 50 characters"),
    ({"after": KEY, "last": True}, "not several"),
    ({"after": KEY, "by_update": True}, "names its key and its UpdatedAt"),
    ({"before": KEY, "before_updated": UPDATED}, "names its key alone"),
])
def test_a_value_that_no_column_could_hold_is_refused(fields, problem) -> None:
    # Cast to the column's type, a longer value would be cut short and could match another.
    with pytest.raises(ValueError, match=re.escape(problem)):
        Filter(**fields)


def test_a_finished_state_by_update_seeks_the_finished_index_and_pages_by_update_then_key() -> None:
    where = Filter(status="Failed", by_update=True, after=KEY, after_updated=UPDATED)
    sql, params = list_sql("SyncQueue", where, 51)
    assert sql == ("SELECT TOP (51) [EnqueuedAt], [Type], [Status], [AttemptNum], [ScheduledFor], "
                   "[UpdatedAt], [Error] FROM dbo.Worker_SyncQueue_V "
                   "WHERE [Status] = CAST(? AS VARCHAR(20)) "
                   "AND [Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted') "
                   "AND UpdatedAt <= CAST(? AS DATETIME2(7)) AND (UpdatedAt < CAST(? AS DATETIME2(7)) "
                   "OR EnqueuedAt < CAST(? AS DATETIME2(7))) ORDER BY UpdatedAt DESC, EnqueuedAt DESC;")
    assert params == ["Failed", UPDATED, UPDATED, KEY]
    # In key order a finished state's list keeps the plan it had: the queue read by key.
    by_key, _ = list_sql("SyncQueue", Filter(status="Failed"), 51)
    assert FINISHED_FILTER not in by_key and "UpdatedAt" not in by_key.split("FROM")[1]
    # An unfinished state states the health index's filter in either order.
    assert UNFINISHED_FILTER in list_sql("SyncQueue", Filter(status="Error", by_update=True), 51)[0]


def test_a_page_before_a_row_and_the_last_page_are_read_the_other_way() -> None:
    before, params = list_sql("SyncQueue", Filter(before=KEY), 51)
    assert before.endswith("WHERE EnqueuedAt > CAST(? AS DATETIME2(7)) ORDER BY EnqueuedAt ASC;")
    assert params == [KEY]
    last, params = list_sql("SyncQueue", Filter(status="Failed", last=True, by_update=True), 51)
    assert last.endswith("ORDER BY UpdatedAt ASC, EnqueuedAt ASC;") and "UpdatedAt <" not in last
    oldest_before, params = list_sql("SyncQueue", Filter(newest_first=False, by_update=True,
                                                         status="Completed", before=KEY,
                                                         before_updated=UPDATED), 51)
    assert ("UpdatedAt <= CAST(? AS DATETIME2(7)) AND (UpdatedAt < CAST(? AS DATETIME2(7)) "
            "OR EnqueuedAt < CAST(? AS DATETIME2(7))) "
            "ORDER BY UpdatedAt DESC, EnqueuedAt DESC;") in oldest_before
    assert params == ["Completed", UPDATED, UPDATED, KEY]
    assert "OFFSET" not in before + last + oldest_before


def test_the_count_reads_one_more_than_its_cap_of_the_lists_set_whatever_page_it_is_on() -> None:
    where = Filter(status="Failed", type="CustomerSync", group_key="g:1", by_update=True,
                   after=KEY, after_updated=UPDATED)
    sql, params = count_sql("SyncQueue", where, 1000)
    assert sql == ("SELECT COUNT(*) AS Items FROM (SELECT TOP (1001) 1 AS Item FROM dbo.Worker_SyncQueue_V "
                   "WHERE [Status] = CAST(? AS VARCHAR(20)) AND " + FINISHED_FILTER + " "
                   "AND [Type] = CAST(? AS VARCHAR(50)) AND [GroupKey] = CAST(? AS NVARCHAR(100)) "
                   "AND [GroupKey] IS NOT NULL) AS Counted;")
    assert params == ["Failed", "CustomerSync", "g:1"]
    # In any order: the count reads the finished state's own index.
    assert FINISHED_FILTER in count_sql("SyncQueue", Filter(status="Completed"), 1000)[0]


def test_the_sql_store_gives_a_page_read_backward_in_the_lists_order() -> None:
    rows = [(KEY + timedelta(seconds=n), "T", "Failed", 1, KEY, KEY, "") for n in (1, 2, 3)]  # as read
    cursor = FakeCursor([(list(LISTED), rows)])
    page = SqlStore(lambda: FakeConnection(cursor)).items("SyncQueue", Filter(before=KEY), 3)
    assert [r["EnqueuedAt"] for r in page] == [KEY + timedelta(seconds=n) for n in (3, 2, 1)]
    assert cursor.executed[1] == (iso(KEY),)


def test_an_order_by_update_needs_a_state_or_a_search_and_the_costly_reads_say_so() -> None:
    assert not update_order_served(Filter(by_update=True, type="CustomerSync"))
    assert update_order_served(Filter(by_update=True, status="Failed"))
    assert update_order_served(Filter(by_update=True, entity_key="C-1"))
    assert reading_note(Filter(status="Failed", by_update=True)) is None  # one seek of the finished index
    assert reading_note(Filter(dedup_key="d")) is None  # one seek of the key's index
    assert reading_note(Filter(status="Pending")) is None  # one seek of the health index
    assert "sorts them" in reading_note(Filter(dedup_key="d", by_update=True))
    assert "Pending backlog" in reading_note(Filter(status="Pending", by_update=True))
    assert "rare" in reading_note(Filter(status="Failed"))
    assert "Error" in reading_note(Filter(error="timeout"))


# -- the same pages from the SQL and from the in-memory store ---------------------------------------

TIMES = ("EnqueuedAt", "UpdatedAt", "ScheduledFor")
VIEW_COLUMNS = (*LISTED, "EntityKey", "GroupKey", "DedupKey", "EmailTo", "PhoneNumber")


class SqliteCursor:
    """The worker view as a SQLite table, read with the SQL list_sql and count_sql make, turned
    into SQLite's dialect: casts dropped (the values are ISO text, compared as text), TOP as
    LIMIT; times come back as datetimes, as pyodbc gives them."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.cursor: sqlite3.Cursor | None = None

    @staticmethod
    def dialect(sql: str) -> str:
        sql = re.sub(r"CAST\(\? AS \w+(?:\(\d+\))?\)", "?", sql)
        sql = re.sub(r"\(SELECT TOP \((\d+)\) (.*)\) AS Counted;", r"(SELECT \2 LIMIT \1) AS Counted;", sql)
        return re.sub(r"^SELECT TOP \((\d+)\) (.*);$", r"SELECT \2 LIMIT \1;", sql)

    def execute(self, sql: str, *params: Any) -> None:
        self.cursor = self.conn.execute(self.dialect(sql), params)

    @property
    def description(self) -> Any:
        return self.cursor.description

    def fetchall(self) -> list[tuple]:
        names = [d[0] for d in self.cursor.description]
        return [tuple(datetime.fromisoformat(v) if n in TIMES and v else v
                      for n, v in zip(names, row, strict=True)) for row in self.cursor.fetchall()]

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        pass


def sqlite_store(fake: FakeStore, queue: str) -> SqlStore:
    """A SqlStore over a SQLite copy of ``fake``'s items of ``queue``, as its worker view."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("ATTACH DATABASE ':memory:' AS dbo;")
    conn.execute(f"CREATE TABLE dbo.Worker_{queue}_V ({', '.join(VIEW_COLUMNS)});")
    rows = [tuple(db.sql_value(r.get(c)) for c in VIEW_COLUMNS) for r in fake.items_by_queue[queue]]
    conn.executemany(f"INSERT INTO dbo.Worker_{queue}_V VALUES ({', '.join('?' * len(VIEW_COLUMNS))});", rows)
    return SqlStore(lambda: FakeConnection(SqliteCursor(conn)))


def history() -> FakeStore:
    """Thirty-odd items of every kind: updates out of key order and tied, keys and recipients
    shared by items of several states."""
    fake = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    states = ("Failed", "Completed", "Pending", "Failed", "Error", "Failed", "Cancelled")
    for n in range(35):
        updated = T0 + timedelta(hours=2, seconds=(n * 7) % 11)  # out of key order, with ties
        fake.add("SyncQueue", 1, states[n % len(states)], type=("CustomerSync", "InventorySync")[n % 2],
                 error=f"HTTP {500 + n % 3} from the CRM", UpdatedAt=updated, EntityKey=f"C-{n % 4}",
                 DedupKey=f"d{n % 5}" if n % 3 else None, GroupKey=f"g{n % 2}" if n % 4 else None,
                 EmailTo=("ann@example.com", "bob@example.com")[n % 2], PhoneNumber=f"+35840{n % 3}")
    return fake


FILTERS = [Filter(), Filter(status="Failed"), Filter(status="Pending"), Filter(type="InventorySync"),
           Filter(error="501"), Filter(entity_key="C-1"), Filter(dedup_key="d2"), Filter(group_key="g1"),
           Filter(status="Failed", group_key="g0"), Filter(email_to="bob@example.com"),
           Filter(phone_number="+358402", type="CustomerSync"), Filter(dedup_key="nobody")]


Pages = list[list[datetime]]


def walk(store: Any, where: Filter, size: int, most: int = 60) -> tuple[Pages, Pages]:
    """Every page of ``where``'s list from the first page on, and from the last page back (at
    most ``most`` pages each way: a pager that goes round in circles fails, not hangs)."""
    forward, page = [], read_page(store, "SyncQueue", where.whole(), size)
    while len(forward) < most:
        forward.append([r["EnqueuedAt"] for r in page.rows])
        if not page.later:
            break
        page = read_page(store, "SyncQueue", page.where.following(page.rows[-1]), size)
    backward, page = [], read_page(store, "SyncQueue", replace(where.whole(), last=True), size)
    while len(backward) < most:
        backward.append([r["EnqueuedAt"] for r in page.rows])
        if not page.earlier:
            break
        page = read_page(store, "SyncQueue", page.where.preceding(page.rows[0]), size)
    return forward, backward


@pytest.mark.parametrize("order", [(False, True), (False, False), (True, True), (True, False)],
                         ids=["newest", "oldest", "updated", "updated-oldest"])
@pytest.mark.parametrize("where", FILTERS, ids=lambda w: ",".join(f"{k}={v}" for k, v in vars(w).items()
                                                                   if v not in (None, True, False)) or "all")
def test_the_sql_and_the_in_memory_store_give_the_same_pages_both_ways(where: Filter, order) -> None:
    fake = history()
    sql = sqlite_store(fake, "SyncQueue")
    where = replace(where, by_update=order[0], newest_first=order[1])
    for size in (1, 3, 4):
        from_sql, from_fake = walk(sql, where, size), walk(fake, where, size)
        assert from_sql == from_fake
        forward, backward = from_sql
        every = [k for page in forward for k in page]
        assert len(every) == len(set(every)) == sql.count("SyncQueue", where, 1000) == fake.count(
            "SyncQueue", where, 1000)
        # Read back from the last page, the same items in the same order, down to the list's
        # first page, which shows full, as First shows it, where fewer than a page remain.
        tail = [k for page in reversed(backward[:-1]) for k in page]
        assert tail == every[len(every) - len(tail):]
        assert backward[-1] == forward[0] and set(tail) | set(backward[-1]) == set(every)
        assert all(len(page) == size for page in forward[:-1])
    assert fake.count("SyncQueue", where, 2) == sql.count("SyncQueue", where, 2) == min(len(every), 3)


def test_the_stores_agree_on_what_each_search_finds() -> None:
    fake = history()
    sql = sqlite_store(fake, "SyncQueue")
    for where in FILTERS:
        found = {r["EnqueuedAt"] for r in fake.items_by_queue["SyncQueue"]
                 if all(r[s.column] == v for s, v in where.searches())
                 and (not where.status or r["Status"] == where.status)
                 and (not where.type or r["Type"] == where.type) and (where.error or "") in r["Error"]}
        assert {r["EnqueuedAt"] for r in sql.items("SyncQueue", where, 100)} == found, where
    assert len({r["Status"] for r in sql.items("SyncQueue", Filter(dedup_key="d2"), 100)}) > 1  # every state


# -- the page -------------------------------------------------------------------------------------


def client(store: FakeStore, **settings: Any) -> TestClient:
    return TestClient(create_app(store, Settings(**settings)), follow_redirects=False)


@pytest.fixture
def admin() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor", "QueueAdmin")


def test_a_dedup_key_search_shows_its_items_of_every_state_newest_first(admin: FakeStore) -> None:
    admin.add("Notification", 3, "Pending", DedupKey="other")
    old = admin.add("Notification", 1, "Completed", DedupKey="reset:ann")
    new = admin.add("Notification", 1, "Pending", DedupKey="reset:ann")
    page = client(admin).get("/queues/Notification", params={"dedup_key": " reset:ann "})
    assert page.status_code == 200
    assert shown_keys(page.text) == [iso(new[0]), iso(old[0])]
    assert admin.listed[-1][1] == Filter(dedup_key="reset:ann")
    assert "2 items with dedup key <b>reset:ann</b>, newest first." in page.text
    assert 'name="dedup_key" value="reset:ann"' in page.text
    assert 'name="entity_key"' not in page.text  # a notification has no entity


def test_an_entity_key_search_is_offered_by_a_job_queue_and_refused_by_one_without(admin: FakeStore) -> None:
    [key] = admin.add("SyncQueue", 1, "Failed", type="CustomerSync", EntityKey="C-1001")
    admin.add("SyncQueue", 1, "Failed", type="CustomerSync", EntityKey="C-1002")
    app = client(admin)
    page = app.get("/queues/SyncQueue", params={"entity_key": "C-1001", "status": "Failed"})
    assert shown_keys(page.text) == [iso(key)] and 'name="entity_key"' in page.text
    assert 'name="recipient"' not in page.text
    refused = app.get("/queues/Notification", params={"entity_key": "C-1001"})
    assert refused.status_code == 400
    assert "Notification&#39;s items have no EntityKey to search by" in refused.text
    assert "dedup key, group key, e-mail address, phone number" in refused.text


def test_a_recipient_is_an_address_or_a_phone_number_and_is_shown_masked(admin: FakeStore) -> None:
    [mail] = admin.add("Notification", 1, "Failed", EmailTo="ann.lee@example.com")
    admin.add("Notification", 1, "Failed", EmailTo="bob@example.com")
    [sms] = admin.add("Notification", 1, "Completed", EmailTo=None, PhoneNumber="+358401234567")
    app = client(admin)
    by_mail = app.get("/queues/Notification", params={"recipient": "ann.lee@example.com"})
    assert shown_keys(by_mail.text) == [iso(mail)] and admin.listed[-1][1].email_to == "ann.lee@example.com"
    assert "sent to <b>a***@example.com</b>" in by_mail.text
    by_phone = app.get("/queues/Notification", params={"recipient": "+358 40 123-4567"})
    assert shown_keys(by_phone.text) == [iso(sms)] and admin.listed[-1][1].phone_number == "+358401234567"
    shown = client(admin, show_personal_data=True).get("/queues/Notification",
                                                       params={"recipient": "bob@example.com"})
    assert "sent to <b>bob@example.com</b>" in shown.text
    too_long = app.get("/queues/Notification", params={"recipient": "+3584012345678901234"})
    assert too_long.status_code == 400
    assert "the phone number to search for has at most 16 characters" in too_long.text
    assert app.get("/queues/SyncQueue", params={"recipient": "ann@example.com"}).status_code == 400


def test_a_failed_list_shows_the_most_recently_failed_first(admin: FakeStore) -> None:
    early, late = admin.add("Notification", 2, "Failed")
    admin._find("Notification", early)["UpdatedAt"] = T0 + timedelta(hours=3)  # failed last
    app = client(admin)
    page = app.get("/queues/Notification?status=Failed")
    assert shown_keys(page.text) == [iso(early), iso(late)]
    assert admin.listed[-1][1].by_update and "last updated first." in page.text
    assert '<option value="updated" selected>' in page.text
    by_key = app.get("/queues/Notification?status=Failed&order=newest")
    assert shown_keys(by_key.text) == [iso(late), iso(early)]
    assert "In key order, a list of Failed items reads the queue" in by_key.text  # said where it costs
    pending = app.get("/queues/Notification?status=Pending")
    assert not admin.listed[-1][1].by_update and '<p class="note">' not in pending.text
    assert app.get("/queues/Notification?order=sideways").status_code == 400
    assert app.get("/queues/Notification?status=Lost").status_code == 400


def test_an_order_by_update_without_a_state_or_a_search_is_shown_by_key(admin: FakeStore) -> None:
    admin.add("Notification", 2, "Failed")
    page = client(admin).get("/queues/Notification?order=updated")
    assert page.status_code == 200 and not admin.listed[-1][1].by_update
    assert "no index holds every item by update, so it is shown by key" in page.text
    assert '<option value="newest" selected>' in page.text


def pages(app: TestClient, url: str) -> Iterator[tuple[list[str], str]]:
    while url:
        page = app.get(url)
        assert page.status_code == 200
        yield shown_keys(page.text), page.text
        url = link(page.text, "Next page")


def test_previous_and_last_read_from_the_first_key_shown_and_from_the_other_end(admin: FakeStore) -> None:
    keys = [iso(k) for k in reversed(admin.add("Notification", 2 * PAGE + 20, "Completed"))]  # newest first
    app = client(admin)
    first = app.get("/queues/Notification?status=Completed&order=newest")
    assert shown_keys(first.text) == keys[:PAGE]
    assert link(first.text, "First page") is None and link(first.text, "Previous page") is None
    last = app.get(link(first.text, "Last page"))
    assert shown_keys(last.text) == keys[-PAGE:]  # the last 50, read from the other end
    assert admin.listed[-1][1].last
    assert link(last.text, "Next page") is None and link(last.text, "Last page") is None
    previous = app.get(link(last.text, "Previous page"))
    assert shown_keys(previous.text) == keys[-2 * PAGE:-PAGE]
    assert admin.listed[-1][1].before == datetime.fromisoformat(keys[-PAGE])  # the first key shown
    assert link(previous.text, "Next page") and link(previous.text, "Last page")
    # Fewer than a page before it: the first page, full, rather than a short one.
    start = app.get(link(previous.text, "Previous page"))
    assert shown_keys(start.text) == keys[:PAGE] and link(start.text, "Previous page") is None
    walked = [k for shown, _ in pages(app, link(first.text, "Next page")) for k in shown]
    assert walked == keys[PAGE:]
    assert "order=newest" in link(last.text, "Previous page")  # the list stays what it was


def test_pages_by_update_carry_both_times_of_the_row(admin: FakeStore) -> None:
    added = admin.add("SyncQueue", PAGE + 3, "Failed", type="CustomerSync", UpdatedAt=T0 + timedelta(hours=2))
    app = client(admin)
    first = app.get("/queues/SyncQueue?status=Failed")
    following = link(first.text, "Next page")
    assert "after_updated=" in following and "after=" in following
    second = app.get(following)
    # Every update tied: the key orders them, and no item shows twice or is missed.
    assert sorted(shown_keys(first.text) + shown_keys(second.text)) == sorted(iso(k) for k in added)
    assert "before_updated=" in link(second.text, "Previous page")


def test_totals_come_from_the_health_view_from_the_page_or_from_a_capped_count(admin: FakeStore) -> None:
    admin.add("Notification", PAGE + 7, "Pending")
    admin.add("Notification", 3, "Failed", error="SMTP 550")
    app = client(admin)
    pending = app.get("/queues/Notification?status=Pending")
    assert f"{PAGE + 7} items" in pending.text and admin.counted == []  # QueueHealth_V's count
    failed = app.get("/queues/Notification?status=Failed")
    assert "3 items" in failed.text and admin.counted == []  # one page holds them all
    typed = app.get("/queues/Notification?status=Pending&type=ResetPassword")
    assert f"{PAGE + 7} items of type <b>ResetPassword</b>" in typed.text
    assert admin.counted == [("Notification", Filter(status="Pending", type="ResetPassword"), COUNT_CAP)]
    admin.add("SyncQueue", COUNT_CAP + 1, "Completed", type="CustomerSync")
    many = app.get("/queues/SyncQueue?status=Completed")
    assert "More than 1,000 items" in many.text
    second = app.get(link(many.text, "Next page"))
    assert "More than 1,000 items" in second.text and admin.counted[-1][1].after is None  # the whole list


def test_a_page_past_the_end_says_so_and_leads_back(admin: FakeStore) -> None:
    admin.add("Notification", 2, "Failed")
    page = client(admin).get("/queues/Notification", params={"status": "Failed", "order": "newest",
                                                            "after": iso(T0)})
    assert "No items past this point." in page.text and link(page.text, "First page")
    assert link(page.text, "Previous page") is None


def test_the_list_module_reads_one_row_past_the_page(admin: FakeStore) -> None:
    admin.add("Notification", PAGE, "Failed")
    page = read_page(admin, "Notification", Filter(status="Failed"))
    assert len(page.rows) == PAGE and not page.later and admin.listed[-1][2] == PAGE + 1
    assert items_page.order_name(Filter(by_update=True, newest_first=False)) == "updated-oldest"


# -- in Chromium -----------------------------------------------------------------------------------

WAIT_S = 15
KEYS_SHOWN = "table.items tbody tr td:first-child a"


@pytest.fixture
def served() -> Iterator[tuple[str, FakeStore]]:
    """The dashboard over many finished notifications, some sharing a DedupKey."""
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    for n in range(260):
        store.add("Notification", 1, "Failed" if n % 3 == 0 else "Completed",
                  error="SMTP 550 5.1.1 mailbox unavailable" if n % 3 == 0 else "",
                  DedupKey="reset:ann" if n % 2 else f"reset:{n}", GroupKey="tenant-7")
    with serving(create_app(store, Settings())) as url:
        yield url, store


def test_search_by_dedup_key_then_last_and_previous_in_chromium(chromium, served, tmp_path: Path) -> None:
    url, store = served
    wait = WebDriverWait(chromium, WAIT_S)
    chromium.get(url + "/queues/Notification")
    chromium.find_element(By.NAME, "dedup_key").send_keys("reset:ann")
    chromium.find_element(By.CSS_SELECTOR, "form.filter button").click()
    wait.until(lambda d: "dedup_key=reset%3Aann" in d.current_url)
    summary = chromium.find_element(By.CSS_SELECTOR, "p.summary").text
    assert summary == "130 items with dedup key reset:ann, newest first."
    wanted = sorted((r["EnqueuedAt"] for r in store.items_by_queue["Notification"]
                     if r["DedupKey"] == "reset:ann"), reverse=True)
    as_shown = [k.isoformat(sep=" ", timespec="microseconds") for k in wanted]
    rows = chromium.find_elements(By.CSS_SELECTOR, "table.items tbody tr")
    assert len(rows) == PAGE and {"Failed", "Completed"} <= {r.find_elements(By.TAG_NAME, "td")[2].text
                                                            for r in rows}
    screenshot(chromium, tmp_path, "dashboard-search-dedup-key")

    chromium.find_element(By.LINK_TEXT, "Last page").click()
    wait.until(lambda d: "last=1" in d.current_url)
    last = [a.text for a in chromium.find_elements(By.CSS_SELECTOR, KEYS_SHOWN)]
    assert last == as_shown[-PAGE:] and not chromium.find_elements(By.LINK_TEXT, "Next page")
    screenshot(chromium, tmp_path, "dashboard-search-last")

    chromium.find_element(By.LINK_TEXT, "Previous page").click()
    wait.until(lambda d: "before=" in d.current_url)
    previous = [a.text for a in chromium.find_elements(By.CSS_SELECTOR, KEYS_SHOWN)]
    # Read the other way from the first key shown: the 50 before it, with every link.
    assert previous == as_shown[-2 * PAGE:-PAGE]
    links = ("First page", "Previous page", "Next page", "Last page")
    assert all(chromium.find_elements(By.LINK_TEXT, text) for text in links)
    assert [f.dedup_key for _, f, _ in store.listed[-3:]] == ["reset:ann"] * 3
    screenshot(chromium, tmp_path, "dashboard-search-previous")

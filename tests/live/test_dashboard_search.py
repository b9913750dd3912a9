"""The item lists' searches and orders over a deployed database that keeps a long history:
each search (EntityKey, DedupKey, GroupKey, a notification's e-mail address and phone
number) finds its items of every state, newest first, and pages both ways; a finished
state's list by last update shows the most recently updated first; and the plan SQL Server
runs for each is a seek of the index meant for it that reads about a page, whatever the
HISTORY items hold, as are the capped counts. Read through the dashboard's own store, as a
QueueMonitor and QueueAdmin member; the plans as dbo (SET STATISTICS XML needs SHOWPLAN)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest

from bench import plans
from relq import db
from relq.dashboard.items import read_page
from relq.dashboard.store import Filter, SqlStore, count_sql, list_sql

pytestmark = pytest.mark.mssql

JOB_TYPE = "RelqSearchJob"  # a type of its own: no worker of another test claims these items
HISTORY = 20_000  # finished items each queue keeps, from long ago
OLD, WANTED, GONE = "2003-01-01", "2004-01-01", "2005-01-01"  # history's keys, the searched items', the end
LATER = "2999-01-01"  # when the searched unfinished items are due: never during a test
PAGE = 50
LIMIT = 2 * PAGE + 16  # rows a seek of one page may read (the page, the row past it, a few ties)

# The items the searches look for, by key (seconds after WANTED), state and keys.
JOBS = [  # (second, status, EntityKey, DedupKey, GroupKey)
    (1, "Completed", "search-test/C-1", "search-test/d-1", "search-test/g-1"),
    (2, "Failed", "search-test/C-1", None, "search-test/g-1"),
    (3, "Cancelled", "search-test/C-2", "search-test/d-1", None),
    (4, "Pending", "search-test/C-1", "search-test/d-1", "search-test/g-1"),
    (5, "Paused", "search-test/C-3", None, "search-test/g-1"),
]
NOTES = [  # (second, status, EmailTo, PhoneNumber)
    (1, "Completed", "search.ann@example.com", None),
    (2, "Failed", "search.ann@example.com", "+14155559999"),
    (3, "Pending", "search.bob@example.com", "+14155559999"),
    (4, "Failed", "search.ann@example.com", None),
]


def at(second: int) -> datetime:
    return datetime.fromisoformat(WANTED).replace(second=second)


HISTORY_ROWS = f"""
    WITH n AS (
        SELECT TOP ({HISTORY}) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i
        FROM sys.all_objects AS a CROSS JOIN sys.all_objects AS b
    )
    SELECT
        DATEADD(SECOND, n.i, CAST('{OLD}' AS DATETIME2(7))) AS At,
        CASE n.i % 100 WHEN 0 THEN 'Failed' WHEN 1 THEN 'Cancelled' ELSE 'Completed' END AS State,
        DATEADD(SECOND, (n.i * 7919) % {HISTORY}, CAST('2003-06-01' AS DATETIME2(7))) AS Updated,
        n.i AS i
    INTO #History
    FROM n;
"""


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Any]:
    """As dbo: HISTORY finished items in SyncQueue and Notification (keys, recipients and
    updates spread over them; SMS for half the notifications), the searched items beside them,
    and none of either after the test."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    jobs = ", ".join(f"('{at(s).isoformat()}', '{state}', N'{entity}', {_text(dedup)}, {_text(group)})"
                     for s, state, entity, dedup, group in JOBS)
    notes = ", ".join(f"('{at(s).isoformat()}', '{state}', N'{mail}', {_text(phone)})"
                      for s, state, mail, phone in NOTES)
    remove(conn)
    db.run_batch(conn.cursor(), f"""
        SET NOCOUNT ON;
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        {HISTORY_ROWS}
        INSERT INTO dbo.SyncQueue (
            EnqueuedAt, [Type], EntityKey, [Status], AttemptNum, ScheduledFor, UpdatedAt, DedupKey, GroupKey)
        SELECT h.At, '{JOB_TYPE}', N'search-history/' + CAST(h.i % 2000 AS NVARCHAR(10)), h.State, 1, h.At,
            h.Updated,
            CASE WHEN h.i % 3 = 0 THEN N'search-history/d' + CAST(h.i % 5000 AS NVARCHAR(10)) END,
            CASE WHEN h.i % 4 = 0 THEN N'search-history/g' + CAST(h.i % 500 AS NVARCHAR(10)) END
        FROM #History AS h;
        INSERT INTO dbo.SyncQueue (
            EnqueuedAt, [Type], EntityKey, [Status], AttemptNum, ScheduledFor, UpdatedAt, DedupKey, GroupKey)
        SELECT CAST(j.At AS DATETIME2(7)), '{JOB_TYPE}', j.EntityKey, j.State, 1, '{LATER}',
            CAST(j.At AS DATETIME2(7)), j.DedupKey, j.GroupKey
        FROM (VALUES {jobs}) AS j (At, State, EntityKey, DedupKey, GroupKey);
        INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], AttemptNum, ScheduledFor, UpdatedAt,
            DedupKey, GroupKey)
        SELECT h.At, 'ResetPassword', h.State, 1, h.At, h.Updated,
            CASE WHEN h.i % 3 = 0 THEN N'search-history/d' + CAST(h.i % 5000 AS NVARCHAR(10)) END,
            CASE WHEN h.i % 4 = 0 THEN N'search-history/g' + CAST(h.i % 500 AS NVARCHAR(10)) END
        FROM #History AS h;
        INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo)
        SELECT h.At, N'history' + CAST(h.i % 1000 AS NVARCHAR(10)) + N'@example.com'
        FROM #History AS h;
        INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
        SELECT h.At, '+1415555' + RIGHT('000' + CAST(h.i % 5000 * 2 AS VARCHAR(10)), 4)
        FROM #History AS h
        WHERE h.i % 2 = 0;
        INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], AttemptNum, ScheduledFor, UpdatedAt)
        SELECT CAST(n.At AS DATETIME2(7)), 'ResetPassword', n.State, 1, '{LATER}', CAST(n.At AS DATETIME2(7))
        FROM (VALUES {notes}) AS n (At, State, EmailTo, PhoneNumber);
        INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo)
        SELECT CAST(n.At AS DATETIME2(7)), n.EmailTo
        FROM (VALUES {notes}) AS n (At, State, EmailTo, PhoneNumber);
        INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
        SELECT CAST(n.At AS DATETIME2(7)), n.PhoneNumber
        FROM (VALUES {notes}) AS n (At, State, EmailTo, PhoneNumber)
        WHERE n.PhoneNumber IS NOT NULL;
        DROP TABLE #History;
        UPDATE STATISTICS dbo.SyncQueue;
        UPDATE STATISTICS dbo.Notification;
        UPDATE STATISTICS dbo.Notification_Email;
        UPDATE STATISTICS dbo.Notification_Sms;
    """)
    try:
        yield conn
    finally:
        remove(conn)
        conn.close()


def _text(value: str | None) -> str:
    return "NULL" if value is None else f"N'{value}'"


def remove(conn: Any) -> None:
    db.run_batch(conn.cursor(), f"""
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
        DELETE FROM dbo.Notification_Email WHERE EnqueuedAt < '{GONE}';
        DELETE FROM dbo.Notification_Sms WHERE EnqueuedAt < '{GONE}';
        DELETE FROM dbo.Notification_ResetPassword WHERE EnqueuedAt < '{GONE}';
        DELETE FROM dbo.Notification WHERE EnqueuedAt < '{GONE}';
    """)


@pytest.fixture
def store(dbo, member) -> SqlStore:
    return SqlStore(member("QueueMonitor", "QueueAdmin"))


def keys(rows: list[dict[str, Any]]) -> list[datetime]:
    return [r["EnqueuedAt"] for r in rows]


def both_ways(store: SqlStore, queue: str, where: Filter, size: int = 2) -> tuple[list[Any], list[Any]]:
    """Every key of the list page by page from its first page, and from its last page back."""
    forward, page = [], read_page(store, queue, where, size)
    while True:
        forward += keys(page.rows)
        if not page.later:
            break
        page = read_page(store, queue, page.where.following(page.rows[-1]), size)
    backward, page = [], read_page(store, queue, replace(where, last=True), size)
    while True:
        backward = keys(page.rows) + [k for k in backward if k not in keys(page.rows)]
        if not page.earlier:
            break
        page = read_page(store, queue, page.where.preceding(page.rows[0]), size)
    return forward, backward


@pytest.mark.parametrize(("queue", "where", "seconds"), [
    ("SyncQueue", Filter(entity_key="search-test/C-1"), [4, 2, 1]),
    ("SyncQueue", Filter(dedup_key="search-test/d-1"), [4, 3, 1]),
    ("SyncQueue", Filter(group_key="search-test/g-1"), [5, 4, 2, 1]),
    ("SyncQueue", Filter(group_key="search-test/g-1", status="Failed"), [2]),
    ("Notification", Filter(email_to="search.ann@example.com"), [4, 2, 1]),
    ("Notification", Filter(phone_number="+14155559999"), [3, 2]),
    ("Notification", Filter(email_to="search.ann@example.com", newest_first=False), [1, 2, 4]),
], ids=["entity", "dedup", "group", "group-failed", "e-mail", "phone", "e-mail-oldest"])
def test_each_search_finds_its_items_of_every_state_and_pages_both_ways(store, queue, where, seconds) -> None:
    expected = [at(s) for s in seconds]
    assert keys(store.items(queue, where, 50)) == expected
    assert both_ways(store, queue, where) == (expected, expected)
    assert store.count(queue, where, 2) == min(len(expected), 3)


def test_a_finished_state_by_update_shows_the_most_recently_updated_first(store) -> None:
    where = Filter(status="Failed", type=JOB_TYPE, by_update=True)  # other tests' items aside
    first = store.items("SyncQueue", where, PAGE)
    updates = [(r["UpdatedAt"], r["EnqueuedAt"]) for r in first]
    assert updates == sorted(updates, reverse=True) and {r["Status"] for r in first} == {"Failed"}
    assert first[0]["EnqueuedAt"] == at(2)  # the searched Failed item: updated in 2004, after all history
    following = store.items("SyncQueue", where.following(first[-1]), PAGE)
    assert (following[0]["UpdatedAt"], following[0]["EnqueuedAt"]) < updates[-1]
    assert not set(keys(first)) & set(keys(following))
    last = store.items("SyncQueue", replace(where, last=True), PAGE)
    assert [(r["UpdatedAt"], r["EnqueuedAt"]) for r in last] == sorted(
        ((r["UpdatedAt"], r["EnqueuedAt"]) for r in last), reverse=True)
    assert store.count("SyncQueue", where, 1000) == HISTORY // 100 + 1
    completed = Filter(status="Completed", type=JOB_TYPE)
    assert store.count("SyncQueue", completed, 1000) == 1001  # more than 1,000


def plan_reads(dbo: Any, sql: str, params: list[Any]) -> list[plans.Access]:
    cursor = dbo.cursor()
    try:
        sets, columns = db.result_sets(cursor, f"SET STATISTICS XML ON; {sql} SET STATISTICS XML OFF;",
                                       *params)
    finally:
        cursor.close()
    documents = plans.showplans(sets, columns)
    assert documents, "no plan came back"
    return [a for document in documents for a in plans.accesses(document)]


# (queue, the list, the table its search reads, the index meant for it and its first key); None
# where no one index is the answer: a common state's list by update may read the finished
# lists' index or IX_<Queue>_Finished (UpdatedAt), both in order and both stopping at the page.
LISTS = [
    ("SyncQueue", Filter(entity_key="search-test/C-1"), "SyncQueue", "IX_SyncQueue_SearchEntityKey",
     "EntityKey"),
    ("SyncQueue", Filter(dedup_key="search-test/d-1"), "SyncQueue", "IX_SyncQueue_SearchDedupKey",
     "DedupKey"),
    ("SyncQueue", Filter(group_key="search-test/g-1"), "SyncQueue", "IX_SyncQueue_SearchGroupKey",
     "GroupKey"),
    ("SyncQueue", Filter(status="Failed", by_update=True), "SyncQueue", "IX_SyncQueue_FinishedByStatus",
     "Status"),
    ("SyncQueue", Filter(status="Completed", by_update=True, newest_first=False), "SyncQueue", None, None),
    ("Notification", Filter(dedup_key="search-history/d3"), "Notification", "IX_Notification_SearchDedupKey",
     "DedupKey"),
    ("Notification", Filter(group_key="search-history/g8"), "Notification", "IX_Notification_SearchGroupKey",
     "GroupKey"),
    ("Notification", Filter(status="Cancelled", by_update=True), "Notification",
     "IX_Notification_FinishedByStatus", "Status"),
    ("Notification", Filter(email_to="search.ann@example.com"), "Notification_Email",
     "IX_Notification_Email_SearchEmailTo", "EmailTo"),
    ("Notification", Filter(phone_number="+14155559999"), "Notification_Sms",
     "IX_Notification_Sms_SearchPhoneNumber", "PhoneNumber"),
]


@pytest.mark.parametrize(("queue", "where", "table", "index", "column"), LISTS,
                         ids=["entity", "dedup", "group", "failed-by-update", "completed-updated-oldest",
                              "notification-dedup", "notification-group", "cancelled-by-update", "e-mail",
                              "phone"])
def test_each_list_seeks_the_index_meant_for_it_and_reads_about_a_page(dbo, queue, where, table, index,
                                                                      column) -> None:
    first = SqlStore(lambda: dbo).items(queue, where, PAGE)
    assert first, "the list is empty: its plan proves nothing"
    for page in (where, where.following(first[-1])):  # the first page, and the page after it
        reads = plan_reads(dbo, *list_sql(queue, page, PAGE + 1))
        if index is not None:
            sought = [a for a in reads if a.table == table and a.index == index]
            assert sought and all(a.physical_op == "Index Seek" for a in sought), reads
            assert all(a.seek_columns[:1] == (column,) for a in sought), sought
        for a in reads:  # nothing read more than about a page, nothing scanned where an index was meant
            if index is not None:
                assert a.physical_op in plans.SEEKS, a
            measure = a.executions if a.physical_op in plans.LOOKUPS else a.rows_read
            assert measure is not None and measure <= LIMIT, a


@pytest.mark.parametrize(("queue", "where"), [(q, w) for q, w, *_ in LISTS] + [
    ("SyncQueue", Filter(status="Completed")), ("Notification", Filter(status="Failed"))])
def test_a_count_reads_no_more_than_its_cap_and_one(dbo, queue, where) -> None:
    """However many items the list holds (19,600 Completed ones here), its count stops: it
    reads 1,001 of them, or a few more where it reads the queue by key and passes over the
    items of other states (2 in 100 of the history)."""
    for a in plan_reads(dbo, *count_sql(queue, where, 1000)):
        measure = a.executions if a.physical_op in plans.LOOKUPS else a.rows_read
        assert measure is not None and measure <= 1100, a

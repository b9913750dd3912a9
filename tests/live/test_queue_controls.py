"""Pause and concurrency limits against a real SQL Server, with many workers claiming at
once: a type limit is never exceeded, as sampled throughout by a connection of its own; a
paused type is never claimed while the other types are; a group limit of 2 runs at most two
of a group, the earliest; and with no control set, groups still run one at a time, in order.

The sampler reads under SNAPSHOT isolation, so that each sample is one consistent moment: a
locking READ COMMITTED scan could meet an item still in Processing, then (after it finished
and another was claimed) the new one, and count both."""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import RCSI, REPO, quote, set_read_committed_snapshot

pytestmark = pytest.mark.mssql

WORKERS = 16
LIMIT = 3
DEADLINE_S = 600
QUERY_TIMEOUT_S = 120

ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey)
SELECT TOP ({count})
    x.n,
    '{type}',
    N'{prefix}-' + CAST(x.n AS NVARCHAR(10)),
    {group}
FROM (
    SELECT ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n
    FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b
) AS x
ORDER BY x.n;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""
# Every item of the type in Processing, a lease that ran out or not: each holds its slot.
PROCESSING_OF_TYPE = "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Status] = 'Processing' AND [Type] = ?;"
MOST_OF_ONE_GROUP = ("SELECT ISNULL(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM dbo.SyncQueue "
                     "WHERE [Status] = 'Processing' AND GroupKey IS NOT NULL GROUP BY GroupKey) AS g;")
# Items in Processing with at least ``?`` earlier unfinished items of their group: 0 while
# groups are taken in enqueue order.
OUT_OF_ORDER = """
SELECT COUNT(*) FROM dbo.SyncQueue AS p
WHERE p.[Status] = 'Processing' AND p.GroupKey IS NOT NULL AND (
    SELECT COUNT(*) FROM dbo.SyncQueue AS e
    WHERE e.GroupKey = p.GroupKey AND e.EnqueuedAt < p.EnqueuedAt
        AND e.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
) >= ?;
"""
LEFT = "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Status] NOT IN ('Completed', 'Failed');"


def prepare(mssql: db.Target, database: str, rcsi: bool) -> str:
    deploy(REPO, mssql, create_db=database)
    set_read_committed_snapshot(mssql, database, rcsi)
    master = db.connect(db.with_database(mssql.conn_str, "master"))
    try:
        db.run_batch(master.cursor(), f"ALTER DATABASE {quote(database)} SET ALLOW_SNAPSHOT_ISOLATION ON;")
    finally:
        master.close()
    return db.with_database(mssql.conn_str, database)


def enqueue(conn: object, type_: str, count: int, groups: int = 0) -> None:
    group = f"N'g-' + CAST(x.n % {groups} AS NVARCHAR(10))" if groups else "NULL"
    db.run_batch(conn.cursor(), ENQUEUE.format(count=count, type=type_, prefix=type_.lower(), group=group))


def work(conn_str: str, slot: str, seen: list, errors: list, stop: threading.Event, type_: str | None = None,
         hold_s: float = 0.005) -> None:
    """A worker slot: claim two at a time, hold each item a moment, report it Completed; until
    nothing is left (or ``stop``)."""
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    try:
        cursor = conn.cursor()
        deadline = time.monotonic() + DEADLINE_S
        while not stop.is_set() and time.monotonic() < deadline:
            rows = db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=slot, BatchSize=2,
                           Type=type_).result_sets[0]
            if not rows:
                if db.query(cursor, LEFT)[0][0] == 0:
                    return
                time.sleep(0.01)
                continue
            for key, token, *_ in rows:
                kind = db.query(cursor, "SELECT [Type] FROM dbo.SyncQueue WHERE EnqueuedAt = ?;", key)[0][0]
                seen.append((key, kind))
                time.sleep(hold_s)
                done = db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token,
                               Status="Completed")
                assert done.return_code == 0
        if not stop.is_set():
            errors.append(f"{slot}: deadline passed with work left")
    except Exception as exc:  # reported by the test, with the other slots' results
        errors.append(f"{slot}: {exc!r}")
    finally:
        conn.close()


def sample(conn_str: str, sql: str, params: tuple, found: list, errors: list, stop: threading.Event) -> None:
    """Run ``sql`` (one number) under SNAPSHOT isolation until ``stop``, recording every answer."""
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        db.run_batch(cursor, "SET TRANSACTION ISOLATION LEVEL SNAPSHOT;")
        while not stop.is_set():
            found.append(db.query(cursor, sql, *params)[0][0])
    except Exception as exc:
        errors.append(f"sampler: {exc!r}")
    finally:
        conn.close()


def run(conn_str: str, workers: int, samplers: list[tuple[str, tuple]], type_: str | None = None
        ) -> tuple[list, list[list], list]:
    """``workers`` slots until the queue is drained, with the samplers running throughout."""
    seen: list = []
    errors: list = []
    found: list[list] = [[] for _ in samplers]
    stop_sampling, stop_work = threading.Event(), threading.Event()
    sampling = [threading.Thread(target=sample, args=(conn_str, sql, params, out, errors, stop_sampling))
                for (sql, params), out in zip(samplers, found, strict=True)]
    run_id = secrets.token_hex(3)
    working = [threading.Thread(target=work, args=(conn_str, f"controls-{run_id}/{n}", seen, errors,
                                                   stop_work, type_))
               for n in range(workers)]
    for t in sampling + working:
        t.start()
    for t in working:
        t.join(timeout=DEADLINE_S + QUERY_TIMEOUT_S)
    stop_work.set()
    stop_sampling.set()
    for t in sampling:
        t.join(timeout=QUERY_TIMEOUT_S)
    assert not any(t.is_alive() for t in sampling + working), "a thread is still running"
    return seen, found, errors


@RCSI
def test_sixteen_workers_never_have_four_in_processing_when_the_type_limit_is_three(
    mssql, new_database, rcsi: bool
) -> None:
    conn_str = prepare(mssql, new_database, rcsi)
    conn = db.connect(conn_str)
    limited = db.call(conn, "dbo.Limit_Queue_trx", Queue="SyncQueue", Type="CustomerSync", Limit=LIMIT)
    assert limited.return_code == 0
    enqueue(conn, "CustomerSync", 400)
    enqueue(conn, "InventorySync", 400)  # unlimited: its claims take no lock and run alongside

    seen, (held,), errors = run(conn_str, WORKERS, [(PROCESSING_OF_TYPE, ("CustomerSync",))])

    assert errors == []
    assert held, "the sampler took no sample"
    assert max(held) <= LIMIT, Counter(held)
    assert LIMIT in held  # the limit was reached: the claims did contend for it
    kinds = Counter(kind for _, kind in seen)
    assert kinds == Counter({"CustomerSync": 400, "InventorySync": 400})
    assert len({key for key, _ in seen}) == 800  # each item claimed once
    assert db.query(conn.cursor(), LEFT)[0][0] == 0
    conn.close()


@RCSI
def test_a_paused_type_is_never_claimed_while_the_other_type_is(mssql, new_database, rcsi: bool) -> None:
    conn_str = prepare(mssql, new_database, rcsi)
    conn = db.connect(conn_str)
    paused = db.call(conn, "dbo.Pause_Queue_trx", Queue="SyncQueue", Type="InventorySync",
                     PauseReason="the inventory API is down", PausedBy="live-test")
    assert paused.return_code == 0 and paused.result_sets[0][0][2]  # IsPaused
    enqueue(conn, "CustomerSync", 300)
    enqueue(conn, "InventorySync", 300)
    # A paused type's expired lease is not taken over either.
    db.run_batch(conn.cursor(), """
        UPDATE TOP (5) dbo.SyncQueue
        SET [Status] = 'Processing', AttemptNum = 1, LockedBy = N'gone/1',
            LeaseUntil = DATEADD(MINUTE, -10, SYSUTCDATETIME()), StartedAt = SYSUTCDATETIME()
        WHERE [Type] = 'InventorySync' AND [Status] = 'Pending';""")

    stop = threading.Event()
    seen: list = []
    errors: list = []
    slots = [threading.Thread(target=work, args=(conn_str, f"paused/{n}", seen, errors, stop))
             for n in range(8)]
    for t in slots:
        t.start()
    # The slots stop once no CustomerSync is left (the rest is paused, so the queue never empties).
    deadline = time.monotonic() + DEADLINE_S
    cursor = conn.cursor()
    while time.monotonic() < deadline and db.query(
            cursor, "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Type] = 'CustomerSync' "
                    "AND [Status] <> 'Completed';")[0][0]:
        time.sleep(0.2)
    stop.set()
    for t in slots:
        t.join(timeout=QUERY_TIMEOUT_S)

    assert errors == []
    assert Counter(kind for _, kind in seen) == Counter({"CustomerSync": 300})
    untouched = db.query(cursor, "SELECT [Status], LockedBy, COUNT(*) FROM dbo.SyncQueue WHERE [Type] = "
                                 "'InventorySync' GROUP BY [Status], LockedBy;")
    assert sorted(untouched) == [("Pending", None, 295), ("Processing", "gone/1", 5)]

    resumed = db.call(conn, "dbo.Resume_Queue_trx", Queue="SyncQueue", Type="InventorySync",
                      ResumedBy="live-test")
    assert resumed.return_code == 0
    more, _, errors = run(conn_str, 8, [])
    assert errors == []
    assert Counter(kind for _, kind in more) == Counter({"InventorySync": 300})
    controls = db.query(cursor, "SELECT IsPaused, PausedBy, PauseReason, ResumedBy FROM dbo.QueueControl_V "
                                "WHERE [Queue] = N'SyncQueue' AND [Type] = 'InventorySync';")
    assert controls == [(False, "live-test", "the inventory API is down", "live-test")]
    conn.close()


@RCSI
def test_a_group_limit_of_two_runs_at_most_the_two_earliest_of_a_group(
    mssql, new_database, rcsi: bool
) -> None:
    conn_str = prepare(mssql, new_database, rcsi)
    conn = db.connect(conn_str)
    assert db.call(conn, "dbo.Limit_Queue_trx", Queue="SyncQueue", Limit=2).return_code == 0
    enqueue(conn, "CustomerSync", 300, groups=6)

    seen, (most, late), errors = run(conn_str, WORKERS, [(MOST_OF_ONE_GROUP, ()), (OUT_OF_ORDER, (2,))])

    assert errors == []
    assert most and late
    assert max(most) <= 2 and 2 in most
    assert max(late) == 0  # never one with two earlier unfinished items of its group
    assert len({key for key, _ in seen}) == 300
    conn.close()


@RCSI
def test_groups_still_run_one_at_a_time_in_order_when_no_control_is_set(
    mssql, new_database, rcsi: bool
) -> None:
    conn_str = prepare(mssql, new_database, rcsi)
    conn = db.connect(conn_str)
    enqueue(conn, "CustomerSync", 200, groups=4)
    enqueue(conn, "InventorySync", 100)

    seen, (most, late), errors = run(conn_str, WORKERS, [(MOST_OF_ONE_GROUP, ()), (OUT_OF_ORDER, (1,))])

    assert errors == []
    assert most and max(most) == 1
    assert max(late) == 0
    assert len({key for key, _ in seen}) == 300
    # Each group's items were claimed in enqueue order.
    groups = dict(db.query(conn.cursor(), "SELECT EnqueuedAt, GroupKey FROM dbo.SyncQueue;"))
    for group in {g for g in groups.values() if g}:
        keys = [key for key, _ in seen if groups[key] == group]
        assert keys == sorted(keys), group
    conn.close()

"""The worker lifecycle against a real SQL Server: eight workers drain a backlog
while a fifth of their claims are abandoned mid-item, as when a worker process
dies. Leases bring the abandoned items back, the attempt history accounts for
every claim, and ordered groups keep their order throughout."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

ITEMS = 10_000
WORKERS = 8
ABANDONED = 0.2  # the share of claimed items whose worker vanishes before reporting
FAILING = 0.05  # the share of attempts that report a (retryable) Error
GROUPS = 200  # every even item joins one of these ordered groups
LEASE_S = 2
MAX_ATTEMPTS = 6
MARGIN_S = 15  # how late after its lease an abandoned item may be taken back
DEADLINE_S = 900
CHUNK = 2_500  # Add_SyncQueue_trx takes at most 4,000 items a call
QUERY_TIMEOUT_S = 120

SETTINGS = f"""
MERGE dbo.AppSettings AS target
USING (
    VALUES
    ('syncqueue.leaseSeconds', {LEASE_S}),
    ('syncqueue.maxAttempts', {MAX_ATTEMPTS}),
    ('syncqueue.backoffBaseMs', 50),
    ('syncqueue.backoffCapMs', 500)
) AS source(Param, ValInt)
    ON target.Param = source.Param
WHEN MATCHED THEN UPDATE SET ValInt = source.ValInt
WHEN NOT MATCHED THEN INSERT (Param, ValInt) VALUES (source.Param, source.ValInt);
"""

ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey)
SELECT TOP ({count})
    x.n,
    'CustomerSync',
    N'item-' + CAST({offset} + x.n AS NVARCHAR(10)),
    CASE WHEN ({offset} + x.n) % 2 = 0 THEN N'g' + CAST(({offset} + x.n) % {groups} AS NVARCHAR(10)) END
FROM (
    SELECT ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n
    FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b
) AS x
ORDER BY x.n;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""

UNFINISHED = "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Status] NOT IN ('Completed', 'Failed');"


@dataclass
class Log:
    claims: list[tuple] = field(default_factory=list)  # (key, token, worker name)
    abandoned: int = 0
    late_refused: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def work(conn_str: str, slot: int, log: Log, deadline: float) -> None:
    """A worker slot: claim a batch, work through it, and now and then vanish
    mid-item. Half of its restarts reuse its name (the claim hands its items
    back at once), half come up under a new one (the items wait for their lease)."""
    rng = random.Random(slot)
    restarts = 0
    name = f"slot-{slot}"
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    try:
        cursor = conn.cursor()
        while time.monotonic() < deadline:
            rows = db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=name,
                           BatchSize=rng.choice((1, 1, 5)), WaitMs=500).result_sets[0]
            if not rows:
                if db.query(cursor, UNFINISHED)[0][0] == 0:
                    return
                continue
            with log.lock:
                log.claims.extend((key, token, name) for key, token, _, _ in rows)
            for i, (key, token, _lease, _attempt) in enumerate(rows):
                if rng.random() < ABANDONED:
                    with log.lock:
                        log.abandoned += len(rows) - i  # the rest of the batch goes with it
                    restarts += 1
                    name = f"slot-{slot}" if restarts % 2 else f"slot-{slot}.{restarts}"
                    break
                outcome = "Error" if rng.random() < FAILING else "Completed"
                try:
                    db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token,
                            Status=outcome, Error="planted failure" if outcome == "Error" else None)
                except db.SqlError as exc:
                    if exc.number not in (735705, 735710):  # taken over while we worked: fine
                        raise
                    with log.lock:
                        log.late_refused += 1
        log.errors.append(f"slot {slot}: deadline passed with work left")
    except Exception as exc:  # reported by the test, with the other workers' results
        log.errors.append(f"slot {slot}: {exc!r}")
    finally:
        conn.close()


def test_abandoned_claims_come_back_and_the_history_and_group_order_hold(mssql, new_database) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    conn = db.connect(conn_str)
    db.run_batch(conn.cursor(), SETTINGS)
    for offset in range(0, ITEMS, CHUNK):
        db.run_batch(conn.cursor(), ENQUEUE.format(count=min(CHUNK, ITEMS - offset),
                                                   offset=offset, groups=GROUPS))
    assert db.query(conn.cursor(), "SELECT COUNT(*) FROM dbo.SyncQueue;")[0][0] == ITEMS

    log = Log()
    deadline = time.monotonic() + DEADLINE_S
    threads = [threading.Thread(target=work, args=(conn_str, slot, log, deadline))
               for slot in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE_S + QUERY_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a worker is still running after the deadline"
    assert log.errors == []
    assert log.abandoned > ITEMS * ABANDONED / 2  # the run did abandon work

    cursor = conn.cursor()
    items = {key: (status, attempts, group, updated)
             for key, status, attempts, group, updated in db.query(
                 cursor, "SELECT EnqueuedAt, [Status], AttemptNum, GroupKey, UpdatedAt FROM dbo.SyncQueue;")}
    attempts = db.query(cursor, "SELECT EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Error "
                                "FROM dbo.SyncQueueAttempt ORDER BY EnqueuedAt, StartedAt;")
    conn.close()

    # Every item ended, Completed or Failed; Failed only when every attempt was spent.
    assert set(Counter(s for s, _, _, _ in items.values())) <= {"Completed", "Failed"}
    assert all(n == MAX_ATTEMPTS for s, n, _, _ in items.values() if s == "Failed")

    # The history accounts for every claim: one row per claim, keyed by the claim's token,
    # held by the worker that claimed, every one of them ended.
    assert Counter((key, token) for key, token, _ in log.claims) == Counter((a[0], a[1]) for a in attempts)
    holders = {(key, token): name for key, token, name in log.claims}
    assert all(holders[(a[0], a[1])] == a[3] for a in attempts)
    assert [a for a in attempts if a[4] is None] == []
    by_item = defaultdict(list)
    for a in attempts:
        by_item[a[0]].append(a)
    for key, (_, attempt_num, _, _) in items.items():
        assert [a[2] for a in by_item[key]] == list(range(1, attempt_num + 1))

    # No abandoned item waited past its lease plus a margin: the next claim of it, or
    # the move to Failed on its last attempt, came in time.
    limit = timedelta(seconds=LEASE_S + MARGIN_S)
    for key, rows in by_item.items():
        for earlier, later in zip(rows, [*rows[1:], None], strict=True):
            if not (earlier[5] or "").startswith("abandoned"):
                continue
            came_back = later[1] if later is not None else items[key][3]
            assert came_back - earlier[1] <= limit, (key, earlier, later)

    # Group order: an item of a group was first claimed only after the item before it
    # in its group had ended (its last change, the end, carries the token of that moment).
    groups = defaultdict(list)
    for key, (_, _, group, _) in items.items():
        if group is not None:
            groups[group].append(key)
    for keys in groups.values():
        keys.sort()
        for before, after in itertools.pairwise(keys):
            assert by_item[after][0][1] >= items[before][3], (before, after)

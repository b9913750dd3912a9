"""A purge running while eight workers drain the same queue, against a real SQL
Server: neither side deadlocks or waits out a timeout, and the purge removes the
old finished items, with their attempt history, and nothing unfinished.

The old items are claimed and reported through the procedures, so each has its
attempt row: dbo.SyncQueueAttempt is the table both sides write (a claim inserts
into it, a report ends its row, the purge deletes from it). Only their times are
moved back two hours. The purge runs as an Agent job would, one small batch a call
(@MaxBatches = 1), and every call that removes items runs while the workers hold
claimed ones: a producer keeps their backlog topped up until the purge is through,
and the workers record when they held items, so the test checks it call by call.
Unfinished items two hours old (a Pending backlog, and paused items nobody
claims) wait beside the old finished ones: only the purge's status filter keeps
them, not its age limit."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import RCSI, REPO, set_read_committed_snapshot

pytestmark = pytest.mark.mssql

OLD = 2_000  # finished through the procedures, then aged two hours: the purge's
BACKLOG = 4_000  # unfinished when the race starts, aged two hours too
HELD = 20  # paused and aged: unfinished from start to end
WORKERS = 8
PURGE_BATCH = 50  # @BatchSize of every purge call, one batch a call
LOW_WATER = 2_000  # the producer tops the backlog up whenever fewer items than this wait
TOP_UP = 1_000
MAX_PRODUCED = 200_000  # a purge that never gets through fails the test rather than fill the disk
CHUNK = 2_500  # Add_SyncQueue_trx takes at most 4,000 items a call
SETUP_BATCH = 500
QUERY_TIMEOUT_S = 120
DEADLINE_S = 600
FINISHED = ("Completed", "Failed", "PartiallyCompleted", "Terminated", "Cancelled")  # the purge's states

ENQUEUE = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey)
SELECT TOP ({count}) x.n, 'CustomerSync', N'{prefix}-' + CAST({offset} + x.n AS NVARCHAR(10))
FROM (
    SELECT ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n
    FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b
) AS x
ORDER BY x.n;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""

# The reports of a batch claim, as a worker that reports in batches sends them.
REPORT = """
SET NOCOUNT ON;
DECLARE @Json NVARCHAR(MAX) = ?;
DECLARE @Outcomes dbo.SyncQueueOutcomeList;
INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status])
SELECT CONVERT(DATETIME2(7), j.EnqueuedAt, 126), CONVERT(DATETIME2(7), j.UpdatedAt, 126), j.[Status]
FROM OPENJSON(@Json) WITH (EnqueuedAt VARCHAR(30), UpdatedAt VARCHAR(30), [Status] VARCHAR(20)) AS j;
EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
"""

# Two hours back: the old items' times (the item's and its attempt's, so that its
# history reads as it would have), and the unfinished items' last change.
AGE = """
UPDATE a SET StartedAt = DATEADD(HOUR, -2, a.StartedAt)
FROM dbo.SyncQueueAttempt AS a
INNER JOIN dbo.SyncQueue AS q ON a.EnqueuedAt = q.EnqueuedAt
WHERE q.EntityKey LIKE N'old-%';
UPDATE dbo.SyncQueue
SET UpdatedAt = DATEADD(HOUR, -2, UpdatedAt), StartedAt = DATEADD(HOUR, -2, StartedAt)
WHERE EntityKey LIKE N'old-%';
UPDATE dbo.SyncQueue SET UpdatedAt = DATEADD(HOUR, -2, UpdatedAt)
WHERE EntityKey LIKE N'new-%' OR EntityKey LIKE N'held-%';
"""

PREFIX = "LEFT(EntityKey, CHARINDEX(N'-', EntityKey) - 1)"
UNFINISHED = "SELECT COUNT(*) FROM dbo.SyncQueue WHERE [Status] IN ('Pending', 'Processing', 'Error');"
# READPAST: the producer's look at the backlog must not wait on, or deadlock with, the
# locks the test is about; skipping a locked item only makes it top up a little early.
WAITING = "SELECT COUNT(*) FROM dbo.SyncQueue WITH (READPAST) WHERE [Status] = 'Pending';"


@dataclass
class PurgeCall:
    started: float  # time.monotonic() before the call was sent
    ended: float  # and after its result came back
    removed: int
    archived: int


@dataclass
class Race:
    produced: int = BACKLOG  # items 'new-1' to 'new-<produced>' were enqueued
    calls: list[PurgeCall] = field(default_factory=list)
    # When a worker surely held claimed items: from the return of a claim (committed)
    # that found it empty-handed to just before it sent the report that left it so
    # again (not committed yet).
    held: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    claimed: threading.Event = field(default_factory=threading.Event)  # a worker holds its first batch
    purged: threading.Event = field(default_factory=threading.Event)  # the purge is through: stop producing
    produced_all: threading.Event = field(default_factory=threading.Event)  # the workers may stop when done
    failed: threading.Event = field(default_factory=threading.Event)  # somebody failed: everybody stops
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, who: str, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{who}: {type(exc).__name__}: {exc}")
        self.failed.set()


def enqueue(conn, prefix: str, total: int, first: int = 0) -> None:
    for offset in range(0, total, CHUNK):
        db.run_batch(conn.cursor(), ENQUEUE.format(count=min(CHUNK, total - offset), offset=first + offset,
                                                   prefix=prefix))


def finish(conn, total: int) -> None:
    """Claim ``total`` items and report them in batches, through the procedures,
    in turn in each finished state: each gets an attempt row, ended with its outcome."""
    done = 0
    while done < total:
        rows = db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy="setup",
                       BatchSize=min(SETUP_BATCH, total - done)).result_sets[0]
        assert rows, f"only {done} of {total} items could be claimed"
        outcomes = [{"EnqueuedAt": db.sql_value(key), "UpdatedAt": db.sql_value(token),
                     "Status": FINISHED[(done + i) % len(FINISHED)]}
                    for i, (key, token, _, _) in enumerate(rows)]
        reported = db.query(conn.cursor(), REPORT, json.dumps(outcomes))
        assert sorted(r[2] for r in reported) == sorted(o["Status"] for o in outcomes)
        done += len(rows)


def connect(conn_str: str):
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    return conn


def work(conn_str: str, n: int, race: Race, deadline: float) -> None:
    """A worker: claim ten, report each Completed, until the producer is done and
    nothing is left to claim. It claims its next batch before it reports the last
    item of the one before, as a worker that prefetches does, so that it holds
    claimed items without a break for as long as there is work: the times it held
    them are what the test checks each purge call against.

    A claim hands back, as abandoned by a restart, whatever its slot name still
    holds (a slot claims only with nothing in hand: README, 'Leases'), so the
    worker claims under two names in turn, 'drain/<n>/a' and 'drain/<n>/b': the item
    it carries over was claimed under the other name than the claim it makes now,
    and everything it claimed under this name was reported before (the batch at
    once, its last item right after the next claim). Under one name the carried
    item would come back as a new attempt and its report be refused (735710)."""
    conn = connect(conn_str)
    names = (f"drain/{n}/a", f"drain/{n}/b")
    claims = 0
    carried = None  # the last claimed item, reported after the next claim
    held_from = 0.0
    try:
        cursor = conn.cursor()
        while not race.failed.is_set():
            if time.monotonic() > deadline:
                raise AssertionError("the deadline passed with work left")
            rows = db.call(conn, "dbo.Next_SyncQueue_Batch_trx", LockedBy=names[claims % 2], BatchSize=10,
                           WaitMs=200).result_sets[0]
            claims += 1
            if carried is None and rows:
                held_from = time.monotonic()  # the claim has committed: the items are held
                race.claimed.set()
            if carried is not None:
                if not rows:  # its report may leave this worker with nothing held
                    with race.lock:
                        race.held.append((held_from, time.monotonic()))
                db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=carried[0], UpdatedAt=carried[1],
                        Status="Completed")
                carried = None
            if not rows:
                if race.produced_all.is_set() and db.query(cursor, UNFINISHED)[0][0] == 0:
                    return
                continue
            for key, token, _, _ in rows[:-1]:
                db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
            carried = rows[-1][:2]
    except Exception as exc:  # reported by the test, with everybody else's
        race.fail(f"worker {n}", exc)
    finally:
        conn.close()


def produce(conn_str: str, race: Race, deadline: float) -> None:
    """Keep the workers busy until the purge is through."""
    conn = connect(conn_str)
    try:
        cursor = conn.cursor()
        while not race.purged.is_set() and not race.failed.is_set():
            if race.produced >= MAX_PRODUCED or time.monotonic() > deadline:
                raise AssertionError(f"the purge was not through after {race.produced} items were enqueued")
            if db.query(cursor, WAITING)[0][0] < LOW_WATER:
                enqueue(conn, "new", TOP_UP, first=race.produced)
                race.produced += TOP_UP
            else:
                race.purged.wait(0.05)
    except Exception as exc:
        race.fail("producer", exc)
    finally:
        race.produced_all.set()
        conn.close()


def purge(conn, race: Race, deadline: float) -> None:
    """One batch a call, again and again, until a call finds nothing to remove."""
    try:
        while not race.failed.is_set():
            if time.monotonic() > deadline:
                raise AssertionError("the deadline passed with old items left")
            started = time.monotonic()
            result = db.call(conn, "dbo.Purge_SyncQueue_trx", OlderThanMinutes=60, BatchSize=PURGE_BATCH,
                             MaxBatches=1, Archive=True)
            ended = time.monotonic()
            assert result.return_code == 0
            ((removed, archived),) = result.result_sets[0]
            race.calls.append(PurgeCall(started, ended, removed, archived))
            if removed == 0:
                return
    except Exception as exc:
        race.fail("purge", exc)
    finally:
        race.purged.set()


def held_throughout(held: list[tuple[float, float]], start: float, end: float) -> bool:
    """Whether at every moment from ``start`` to ``end`` some worker held claimed items."""
    reach = start
    for held_from, held_to in sorted(held):
        if held_from > reach:
            return False
        reach = max(reach, held_to)
        if reach >= end:
            return True
    return False


@RCSI
def test_a_purge_beside_eight_workers_removes_the_old_finished_items_and_nothing_unfinished(
    mssql, new_database, rcsi: bool
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    set_read_committed_snapshot(mssql, new_database, rcsi)
    conn_str = db.with_database(mssql.conn_str, new_database)
    conn = connect(conn_str)
    cursor = conn.cursor()
    enqueue(conn, "old", OLD)
    finish(conn, OLD)  # nothing else is in the queue yet: the claims take the old items
    enqueue(conn, "held", HELD)
    for (key,) in db.query(cursor, "SELECT EnqueuedAt FROM dbo.SyncQueue WHERE EntityKey LIKE N'held-%';"):
        db.call(conn, "dbo.Pause_SyncQueue_trx", EnqueuedAt=key)
    enqueue(conn, "new", BACKLOG)
    db.run_batch(cursor, AGE)
    ((last_old,),) = db.query(cursor, "SELECT MAX(EnqueuedAt) FROM dbo.SyncQueue "
                                      "WHERE EntityKey LIKE N'old-%';")

    # Each old item is finished, old enough, and has its attempt, ended with its outcome ...
    old = db.query(cursor, """
        SELECT q.[Status], COUNT(*) FROM dbo.SyncQueue AS q
        INNER JOIN dbo.SyncQueueAttempt AS a ON a.EnqueuedAt = q.EnqueuedAt AND a.Outcome = q.[Status]
        WHERE q.EntityKey LIKE N'old-%' AND q.UpdatedAt < DATEADD(MINUTE, -60, SYSUTCDATETIME())
        GROUP BY q.[Status];""")
    assert dict(old) == {status: OLD // len(FINISHED) for status in FINISHED}
    assert db.query(cursor, "SELECT COUNT(*) FROM dbo.SyncQueueAttempt;")[0][0] == OLD
    # ... and so old are the unfinished ones: only their status keeps them from the purge.
    unfinished = db.query(cursor, """
        SELECT [Status], COUNT(*) FROM dbo.SyncQueue
        WHERE EntityKey NOT LIKE N'old-%' AND UpdatedAt < DATEADD(MINUTE, -60, SYSUTCDATETIME())
        GROUP BY [Status];""")
    assert dict(unfinished) == {"Pending": BACKLOG, "Paused": HELD}

    race = Race()
    deadline = time.monotonic() + DEADLINE_S
    threads = [threading.Thread(target=work, args=(conn_str, n, race, deadline)) for n in range(WORKERS)]
    threads.append(threading.Thread(target=produce, args=(conn_str, race, deadline)))
    for t in threads:
        t.start()
    try:
        if race.claimed.wait(QUERY_TIMEOUT_S):
            purge(conn, race, deadline)
        else:
            race.fail("workers", AssertionError("no worker claimed anything"))
    finally:
        race.purged.set()
        for t in threads:
            t.join(DEADLINE_S + QUERY_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a worker or the producer is still running"
    assert race.errors == []  # no deadlock victim (1205), no lock timeout, on either side

    removing = [c for c in race.calls if c.removed > 0]
    assert len(removing) >= OLD // PURGE_BATCH
    assert all(c.removed <= PURGE_BATCH for c in removing)
    assert [c for c in removing if not held_throughout(race.held, c.started, c.ended)] == []
    assert sum(c.removed for c in race.calls) == OLD
    assert sum(c.archived for c in race.calls) == OLD

    left = db.query(cursor, f"SELECT {PREFIX}, [Status], COUNT(*) FROM dbo.SyncQueue "
                            f"GROUP BY {PREFIX}, [Status];")
    archived = db.query(cursor, f"SELECT {PREFIX}, [Status], COUNT(*) FROM dbo.SyncQueueArchive "
                                f"GROUP BY {PREFIX}, [Status];")
    old_attempts = db.query(cursor, "SELECT COUNT(*) FROM dbo.SyncQueueAttempt "
                                    "WHERE EnqueuedAt <= CAST(? AS DATETIME2(7));", last_old)[0][0]
    conn.close()
    # The workers drained every item, backlog and top-ups; the paused ones wait on.
    assert {(p, s): n for p, s, n in left} == {("new", "Completed"): race.produced, ("held", "Paused"): HELD}
    # What the purge removed is exactly the old finished items, in every finished state.
    assert {(p, s): n for p, s, n in archived} == {("old", s): OLD // len(FINISHED) for s in FINISHED}
    assert old_attempts == 0


def test_a_purge_removes_a_notification_with_its_subtype_channels_and_history_and_archives_it(
    mssql, new_database
) -> None:
    """Against the real foreign keys (tSQLt's fakes drop them): claimed and completed
    through the procedures, aged, then purged with @Archive = 1."""
    deploy(REPO, mssql, create_db=new_database)
    conn = db.connect(db.with_database(mssql.conn_str, new_database))
    cursor = conn.cursor()
    for n in range(20):
        db.call(conn, "dbo.Add_Notification_ResetPassword_trx", UserID=n + 1, Username=f"user{n}",
                OTP="123456", EmailTo=f"user{n}@example.com", PhoneNumber="+14155550123")
    for _ in range(20):
        (key, token, _, _), = db.call(conn, "dbo.Next_Notification_trx", LockedBy="purge/1").result_sets[0]
        db.call(conn, "dbo.Modify_Notification_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")
    db.run_batch(cursor, "UPDATE dbo.Notification SET UpdatedAt = DATEADD(DAY, -2, UpdatedAt);")
    count = "SELECT COUNT(*) FROM {0};"
    assert db.query(cursor, count.format("dbo.NotificationAttempt"))[0][0] == 20

    result = db.call(conn, "dbo.Purge_Notification_trx", OlderThanMinutes=60, BatchSize=7, Archive=True)
    assert result.result_sets[0] == [(20, 20)]
    for table in ("dbo.Notification", "dbo.Notification_ResetPassword", "dbo.Notification_Email",
                  "dbo.Notification_Sms", "dbo.NotificationAttempt"):
        assert db.query(cursor, count.format(table))[0][0] == 0, table
    archived = db.query(cursor, "SELECT COUNT(*), MIN(EmailTo), MIN(PhoneNumber) "
                                "FROM dbo.NotificationArchive;")
    conn.close()
    assert archived == [(20, "user0@example.com", "+14155550123")]

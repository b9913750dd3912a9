"""Producers against a real SQL Server: an enqueue inside an application's open
transaction holds up no other producer, and a cancelled enqueue leaves no lock behind.

The keys of a call take no lock: each call reads the last key, committed or not, and
inserts above it, trying again when another producer took the same keys in that
instant; a DedupKey is checked under a lock of its own held to the end of the
transaction, and so is an ordered group's GroupKey (dbo.Lock_ItemKeys_utx). So:
- producer A enqueues with an _utx and keeps its transaction open; producer B's _trx
  returns meanwhile with a larger key (were B to wait for A, it could only fail with
  735709 after 10 s, since A cannot commit while the test waits for B: no clock is
  needed to tell); A commits; a claim gets both items;
- a producer of the same DedupKey does wait for A, and then gets A's item; a producer
  into the same ordered group waits for A too, so that no later item of a group is
  committed before an earlier one (a claim would otherwise wait for A's transaction);
- an enqueue whose client gives up (a query timeout: an attention, which no CATCH
  sees) while a lock on the table holds its tries up leaves no lock, and the next
  producer enqueues at once, though the cancelled session stays connected;
- an error of the INSERT (XACT_ABORT ON, as every _trx sets it) leaves no lock either;
- many producers at once, each many items a call, get unique keys, contiguous within
  a call.
Both queues: SyncQueue (templated Add_) and Notification (its single enqueue is its
batch enqueue for one item)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from relq import db
from relq.live import throwaway_database
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

WAIT_S = 30  # how long the test polls for B's lock wait to show before failing

SYNC_UTX = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
DECLARE @First DATETIME2(7);
DECLARE @RetCode INT;
INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey, GroupKey) VALUES (1, 'CustomerSync', ?, ?, ?);
EXEC @RetCode = dbo.Add_SyncQueue_utx @Items = @Items, @FirstEnqueuedAt = @First OUTPUT;
SELECT @RetCode, @First;
"""

SYNC_TRX = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey, GroupKey) VALUES (1, 'CustomerSync', ?, ?, ?);
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""

NOTIFICATION_UTX = """
SET NOCOUNT ON;
DECLARE @Key DATETIME2(7);
DECLARE @RetCode INT;
EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
    @UserID = 7, @Username = ?, @OTP = '123456', @EmailTo = N'ada@example.com',
    @DedupKey = ?, @GroupKey = ?, @EnqueuedAt = @Key OUTPUT;
SELECT @RetCode, @Key;
"""


def notification_trx(conn, username: str, dedup: str | None, group: str | None):
    return db.call(
        conn,
        "dbo.Add_Notification_ResetPassword_trx",
        UserID=7,
        Username=username,
        OTP="123456",
        EmailTo="ada@example.com",
        DedupKey=dedup,
        GroupKey=group,
    )


def notification_key(conn, username: str, dedup: str | None = None, group: str | None = None):
    return notification_trx(conn, username, dedup, group).result_sets[0][0][0]


def sync_trx(conn, entity: str, dedup: str | None, group: str | None):
    cursor = conn.cursor()
    try:
        return db.result_sets(cursor, SYNC_TRX, entity, dedup, group, context="dbo.Add_SyncQueue_trx")[0][0]
    finally:
        cursor.close()


def sync_key(conn, entity: str, dedup: str | None = None, group: str | None = None):
    return sync_trx(conn, entity, dedup, group)[0][0]


QUEUES = {
    # queue: (enqueue in an open transaction, enqueue with the _trx -> its key, claim procedure)
    "SyncQueue": (SYNC_UTX, sync_key, "dbo.Next_SyncQueue_Batch_trx"),
    "Notification": (NOTIFICATION_UTX, notification_key, "dbo.Next_Notification_Batch_trx"),
}


@pytest.fixture(scope="module")
def database(mssql: db.Target) -> Iterator[str]:
    with throwaway_database(REPO, mssql, prefix="relq_locks") as name:
        yield name


@pytest.fixture
def connect(mssql: db.Target, database: str) -> Iterator:
    """Opens connections to the test's database, and closes them (rolling back) at the end."""
    opened = []

    def open_():
        conn = db.connect(db.with_database(mssql.conn_str, database))
        conn.timeout = 60
        opened.append(conn)
        return conn

    yield open_
    for conn in opened:
        conn.close()


def enqueue_open(conn, queue: str, name: str, dedup: str | None = None, group: str | None = None):
    """Producer A: enqueues inside a transaction it leaves open (BEGIN TRANSACTION on an
    autocommit connection, as relq.db.transaction opens one: pyodbc's autocommit=False opens
    none with Microsoft's driver until a statement writes); returns the new key."""
    cursor = conn.cursor()
    db.run_batch(cursor, "BEGIN TRANSACTION;")
    code, key = cursor.execute(QUEUES[queue][0], name, dedup, group).fetchone()
    assert code == 0
    return key


def commit(conn) -> None:
    """Ends the transaction enqueue_open left open."""
    db.run_batch(conn.cursor(), "COMMIT TRANSACTION;")


def claim_all(conn, queue: str) -> set:
    rows = db.call(conn, QUEUES[queue][2], LockedBy=f"locks/{queue}", BatchSize=100).result_sets[0]
    return {row[0] for row in rows}


CLEAR = {
    "SyncQueue": "DELETE FROM dbo.SyncQueueAttempt; DELETE FROM dbo.SyncQueue;",
    "Notification": "DELETE FROM dbo.NotificationAttempt; DELETE FROM dbo.Notification_Email; "
    "DELETE FROM dbo.Notification_Sms; DELETE FROM dbo.Notification_ResetPassword; "
    "DELETE FROM dbo.Notification;",
}


def clear(conn, queue: str) -> None:
    """The module's database is shared by its tests: each starts from an empty queue."""
    db.run_batch(conn.cursor(), CLEAR[queue])


@pytest.mark.parametrize("queue", list(QUEUES))
def test_a_producer_in_an_open_transaction_holds_up_no_other_producer(connect, queue: str) -> None:
    admin = connect()
    clear(admin, queue)
    a = connect()
    key_a = enqueue_open(a, queue, "producer-a")

    key_b = QUEUES[queue][1](connect(), "producer-b", None)  # returns while A's transaction is open

    assert key_b > key_a
    commit(a)
    assert claim_all(admin, queue) == {key_a, key_b}


def lock_waiters(admin, database: str) -> list[str]:
    """The sessions of ``database`` waiting for an application lock, with the lock's resource."""
    return [
        row[0]
        for row in admin.cursor()
        .execute(
            "SELECT l.resource_description FROM sys.dm_tran_locks AS l "
            "WHERE l.resource_type = N'APPLICATION' AND l.request_status = N'WAIT' "
            "AND l.resource_database_id = DB_ID(?);",
            database,
        )
        .fetchall()
    ]


def wait_for_b(admin, database: str, enqueue) -> tuple[list, list, threading.Thread]:
    """Runs producer B's ``enqueue`` in a thread and returns the application locks it was
    seen waiting for, the list its result or error lands in, and the thread."""
    results: list = []

    def producer_b() -> None:
        try:
            results.append(enqueue())
        except Exception as exc:  # reported by the test
            results.append(exc)

    thread = threading.Thread(target=producer_b, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not lock_waiters(admin, database) and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    return lock_waiters(admin, database), results, thread


@pytest.mark.parametrize("queue", list(QUEUES))
def test_a_producer_of_the_same_dedup_key_waits_and_gets_the_first_item(
    connect, database: str, queue: str
) -> None:
    admin = connect()
    clear(admin, queue)
    a = connect()
    key_a = enqueue_open(a, queue, "producer-a", dedup="order-42")

    waiting, results, thread = wait_for_b(
        admin, database, lambda: QUEUES[queue][1](connect(), "producer-b", dedup="order-42")
    )
    commit(a)
    thread.join(WAIT_S)

    assert waiting, "producer B did not wait for the DedupKey's lock"
    assert results == [key_a], "B gets A's item, not a second one"
    assert claim_all(admin, queue) == {key_a}


@pytest.mark.parametrize("queue", list(QUEUES))
def test_a_producer_into_the_same_group_waits_so_the_group_commits_in_key_order(
    connect, database: str, queue: str
) -> None:
    admin = connect()
    clear(admin, queue)
    a = connect()
    key_a = enqueue_open(a, queue, "producer-a", group="customer-7")

    waiting, results, thread = wait_for_b(
        admin, database, lambda: QUEUES[queue][1](connect(), "producer-b", group="customer-7")
    )
    commit(a)
    thread.join(WAIT_S)

    assert waiting, "producer B did not wait for the group's lock"
    assert len(results) == 1 and not isinstance(results[0], Exception), results
    assert results[0] > key_a
    assert claim_all(admin, queue) == {key_a}, "a claim takes a group's first item only"


# A constraint the procedures do not check themselves, so that the INSERT fails with 547
# (XACT_ABORT ON in the _trx: the batch ends at the error).
PLANTED = {
    "SyncQueue": (
        "ALTER TABLE dbo.SyncQueue ADD CONSTRAINT Test_SyncQueue_NotBoom CHECK (EntityKey <> N'boom');",
        "ALTER TABLE dbo.SyncQueue DROP CONSTRAINT Test_SyncQueue_NotBoom;",
    ),
    "Notification": (
        "ALTER TABLE dbo.Notification ADD CONSTRAINT Test_Notification_NotBoom "
        "CHECK (ISNULL(DedupKey, N'') <> N'boom');",
        "ALTER TABLE dbo.Notification DROP CONSTRAINT Test_Notification_NotBoom;",
    ),
}


def application_locks(admin, database: str) -> list[tuple]:
    """Every application lock of ``database``, granted or waited for, with its session."""
    return admin.cursor().execute(
        "SELECT l.request_session_id, l.resource_description, l.request_status FROM sys.dm_tran_locks AS l "
        "WHERE l.resource_type = N'APPLICATION' AND l.resource_database_id = DB_ID(?);",
        database,
    ).fetchall()


@pytest.mark.parametrize("queue", list(QUEUES))
def test_an_error_of_the_insert_leaves_no_lock(connect, database: str, queue: str) -> None:
    admin = connect()
    clear(admin, queue)
    plant, remove = PLANTED[queue]
    admin.cursor().execute(plant)
    try:
        failing = connect()
        with pytest.raises(db.SqlError) as failed:
            QUEUES[queue][1](failing, "boom", dedup="boom")
        assert failed.value.number == 547
        assert application_locks(admin, database) == []
        assert failing.cursor().execute("SELECT @@TRANCOUNT;").fetchone()[0] == 0

        other = connect()
        other.timeout = 2  # a leaked lock would keep it waiting
        key = enqueue_open(other, queue, "after-the-failure")
        commit(other)
        assert claim_all(admin, queue) == {key}
    finally:
        admin.cursor().execute(remove)


TABLE = {"SyncQueue": "dbo.SyncQueue", "Notification": "dbo.Notification"}


@pytest.mark.parametrize("queue", list(QUEUES))
def test_a_cancelled_enqueue_leaves_no_lock_and_the_next_producer_enqueues_at_once(
    connect, database: str, queue: str
) -> None:
    """Producer B's enqueue, with a DedupKey, keeps trying while a session holds the whole
    table (as a purge's escalated lock would); B's client gives up after 1 s, an attention
    that ends the call between two statements. The _trx runs with XACT_ABORT ON, so the
    attention rolls B's transaction back, and its DedupKey's lock with it (the read and the
    INSERT, which run with it off, wait for no lock: the attention lands in the 20 ms pause
    between tries). Once the table is free, producer C, with a query timeout of its own of
    1 s, enqueues the same DedupKey at once, while B's session is still connected."""
    admin = connect()
    clear(admin, queue)
    holder = connect()
    cursor = holder.cursor()
    db.run_batch(cursor, "BEGIN TRANSACTION;")
    cursor.execute(f"SELECT COUNT(*) FROM {TABLE[queue]} WITH (TABLOCKX, HOLDLOCK);").fetchall()

    b = connect()
    b.timeout = 1
    with pytest.raises(db.SqlError) as cancelled:
        QUEUES[queue][1](b, "producer-b", dedup="cancelled-42")
    assert cancelled.value.sqlstate in ("HYT00", "HYT01"), cancelled.value
    db.run_batch(cursor, "ROLLBACK TRANSACTION;")

    assert application_locks(admin, database) == []
    c = connect()
    c.timeout = 1
    key_c = QUEUES[queue][1](c, "producer-c", dedup="cancelled-42")
    assert claim_all(admin, queue) == {key_c}  # B wrote nothing
    b.close()


SYNC_MANY = """
SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey)
SELECT TOP (?) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)), 'CustomerSync', ?
FROM sys.all_objects;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""


def test_producers_at_once_get_unique_keys_contiguous_within_each_call(connect) -> None:
    """Eight producers, 25 calls of 40 items each, at once: the keys race for the same last
    key all the time, and every call's INSERT that lost is made again above it."""
    admin = connect()
    clear(admin, "SyncQueue")
    calls: list[list] = []
    errors: list[Exception] = []

    def producer(n: int) -> None:
        conn = connect()
        try:
            for call in range(25):
                rows = db.result_sets(conn.cursor(), SYNC_MANY, 40, f"p{n}-{call}",
                                      context="dbo.Add_SyncQueue_trx")[0][0]
                calls.append(sorted(row[0] for row in rows))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    keys = [key for call in calls for key in call]
    assert len(calls) == 200 and len(keys) == len(set(keys)) == 8000
    step = timedelta(microseconds=1)  # a call's keys are one microsecond apart
    for call in calls:
        assert all(later - earlier == step for earlier, later in itertools.pairwise(call))
    stored = admin.cursor().execute("SELECT COUNT(*), COUNT(DISTINCT EntityKey) FROM dbo.SyncQueue;")
    assert tuple(stored.fetchone()) == (8000, 200)

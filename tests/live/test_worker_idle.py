"""An idle worker against a real SQL Server: its slots wait in the worker, not in the
server. With the default settings the idle slots share one poll, so at most one of the
worker's sessions runs a request at any moment (the poller's short claim) and the claims
stay within relq.worker.idle.IDLE_CLAIMS_PER_S whatever the slot count; with a long-poll
(--wait-ms above 0) every idle slot runs a request that waits inside the server. An item
enqueued to the idle worker is done.

Seeing the worker's requests (sys.dm_exec_requests) needs VIEW SERVER STATE (the live
tier's login is a sysadmin)."""

from __future__ import annotations

import threading
import time

import pytest

from relq import db
from relq.deploy.apply import deploy
from relq.worker.cli import sql_connector
from relq.worker.handlers import Handlers, Item
from relq.worker.idle import IDLE_CLAIMS_PER_S
from relq.worker.procedures import Procedures
from relq.worker.runtime import Settings, Worker
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

SLOTS = 8
IDLE_S = 3.0  # inside the first FAST_FOR_S: the poll runs at its fastest
SAMPLES = 60
DEADLINE_S = 120

# Requests running now in this database on any session but the test's own: the worker's.
WORKER_REQUESTS = """
SELECT COUNT(*)
FROM sys.dm_exec_requests AS r
INNER JOIN sys.dm_exec_sessions AS s ON r.session_id = s.session_id
WHERE r.database_id = DB_ID() AND r.session_id <> @@SPID AND s.is_user_process = 1;
"""


class Counting:
    """A slot's procedures that count its claims."""

    def __init__(self, inner: Procedures, counts: list[int], lock: threading.Lock) -> None:
        self.inner, self.counts, self.lock = inner, counts, lock
        self.queue = inner.queue

    def claim(self, *args, **kwargs) -> list:
        with self.lock:
            self.counts[0] += 1
        return self.inner.claim(*args, **kwargs)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def run_idle(conn_str: str, cursor, wait_ms: int, handlers: Handlers) -> tuple[Worker, threading.Thread,
                                                                                 list[int], list[int]]:
    """Start a worker of SLOTS slots on the empty queue and, once every slot has made its own
    first claim, sample its running requests for IDLE_S: (worker, its thread, [claims made while
    sampled, seconds sampled], the request counts sampled)."""
    connect, counts, lock = sql_connector(conn_str, "SyncQueue"), [0], threading.Lock()
    worker = Worker(Settings("SyncQueue", f"idle-{wait_ms}", concurrency=SLOTS, wait_ms=wait_ms, grace_s=10,
                             type="CustomerSync"), handlers, lambda: Counting(connect(), counts, lock))
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + DEADLINE_S
    while counts[0] < SLOTS or (wait_ms == 0 and worker.idle.idle_slots() < SLOTS):
        assert time.monotonic() < deadline and thread.is_alive(), "the worker's slots never went idle"
        time.sleep(0.05)
    with lock:
        before = counts[0]
    samples = []
    started = time.monotonic()
    for _ in range(SAMPLES):
        samples.append(db.query(cursor, WORKER_REQUESTS)[0][0])
        time.sleep(IDLE_S / SAMPLES)
    with lock:
        claims = counts[0] - before
    return worker, thread, [claims, time.monotonic() - started], samples


def stop(worker: Worker, thread: threading.Thread) -> None:
    worker.stop()
    thread.join(DEADLINE_S)
    assert not thread.is_alive()


def test_idle_slots_share_one_short_poll_and_nothing_waits_in_the_server(mssql, new_database) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    admin = db.connect(conn_str)
    cursor = admin.cursor()
    done = threading.Event()
    handlers = Handlers()

    @handlers.register("SyncQueue", "CustomerSync")
    def sync(item: Item) -> str:
        done.set()
        return "synced"

    try:
        worker, thread, (claims, elapsed), samples = run_idle(conn_str, cursor, 0, handlers)
        try:
            # only the poller ever claims, one short transaction at a time
            assert max(samples) <= 1, samples
            # one poll per POLL_S at most, whatever the slot count (the +1: a poll in flight)
            assert claims <= elapsed * IDLE_CLAIMS_PER_S + 1, (claims, elapsed)
            assert claims >= 1  # the poll goes on
            db.run_batch(cursor, """
                SET NOCOUNT ON;
                DECLARE @Items dbo.SyncQueueItemList;
                INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, 'CustomerSync', N'idle-1');
                EXEC dbo.Add_SyncQueue_trx @Items = @Items;
            """)
            assert done.wait(DEADLINE_S), "the idle worker never took the item"
        finally:
            stop(worker, thread)
        assert worker.failure is None

        # The contrast, which shows the sampling sees the worker's requests: a long-poll keeps
        # a request waiting in the server for every idle slot.
        worker, thread, _, samples = run_idle(conn_str, cursor, 5000, handlers)
        try:
            assert max(samples) >= 2, samples
        finally:
            stop(worker, thread)
    finally:
        admin.close()

"""Batches against a real SQL Server: the callback of a batch is enqueued exactly once,
even when two workers finish its last two items at the same moment.

Each round opens a batch in SyncQueue whose callback is an InventorySync job, enqueues two
CustomerSync items into it and seals it; two workers, each on its own connection, claim
one item each, then wait at a barrier and report Completed together. Both reports count
on the batch row in their own transactions; the row's exclusive lock serializes them, and
only the one whose UPDATE finishes the batch enqueues the callback
(dbo.Count_QueueBatch_utx). Many rounds, with READ_COMMITTED_SNAPSHOT off and on: every
round ends with exactly one callback, carrying the batch's counts, and the batch's row
names it. No clock decides anything: a lost race would show as a second callback or
none."""

from __future__ import annotations

import json
import secrets
import threading

import pytest

from relq import batches, db
from relq.batches import Job
from relq.deploy.apply import deploy
from relq.errors import Msg
from tests.conftest import RCSI, REPO, set_read_committed_snapshot

pytestmark = pytest.mark.mssql

ROUNDS = 60
QUERY_TIMEOUT_S = 30
JOIN_TIMEOUT_S = 60

CALLBACKS = """SELECT q.EnqueuedAt, q.Payload FROM dbo.Worker_SyncQueue_V AS q
WHERE q.[Type] = 'InventorySync' AND q.EntityKey = ?;"""


def connect(conn_str: str):
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    return conn


def claim(conn, worker: str) -> tuple:
    """One CustomerSync item for ``worker``: (EnqueuedAt, UpdatedAt)."""
    [row] = db.call(conn, "dbo.Next_SyncQueue_trx", LockedBy=worker, Type="CustomerSync").result_sets[0]
    return row[0], row[1]


def view_row(conn, batch_id: int) -> dict:
    cursor = conn.cursor()
    rows = db.query(cursor, "SELECT v.[State], v.Total, v.Completed, v.Remaining, v.CallbackEnqueuedAt "
                            "FROM dbo.QueueBatch_V AS v WHERE v.BatchID = ?;", batch_id)
    state, total, completed, remaining, callback_at = rows[0]
    return {"state": state, "total": total, "completed": completed, "remaining": remaining,
            "callback_at": callback_at}


@RCSI
def test_two_workers_finishing_a_batchs_last_two_items_together_enqueue_one_callback(
    mssql, new_database, rcsi: bool
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    set_read_committed_snapshot(mssql, new_database, rcsi)
    conn_str = db.with_database(mssql.conn_str, new_database)
    producer = connect(conn_str)
    workers = [connect(conn_str), connect(conn_str)]
    try:
        for n in range(ROUNDS):
            entity = f"round-{n}"
            batch_id = batches.open_batch(producer, "SyncQueue", "InventorySync", entity_key=entity,
                                          payload={"round": n}, name=f"race {n}")
            batches.add_jobs(producer, "SyncQueue", [Job("CustomerSync", f"{entity}-a"),
                                                     Job("CustomerSync", f"{entity}-b")], batch_id=batch_id)
            batches.seal_batch(producer, batch_id)
            held = [claim(w, f"worker-{i}") for i, w in enumerate(workers)]
            start = threading.Barrier(2)
            outcomes: list[object] = []

            def report(conn, key, token, start=start, outcomes=outcomes) -> None:
                try:
                    start.wait(timeout=30)
                    outcomes.append(db.call(conn, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token,
                                            Status="Completed").return_code)
                except Exception as exc:  # reported below, with the other worker's outcome
                    outcomes.append(repr(exc))

            threads = [threading.Thread(target=report, args=(w, *h))
                       for w, h in zip(workers, held, strict=True)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=JOIN_TIMEOUT_S)

            assert outcomes == [0, 0], (n, outcomes)
            callbacks = db.query(producer.cursor(), CALLBACKS, entity)
            assert len(callbacks) == 1, (n, callbacks)
            [(callback_key, payload)] = callbacks
            carried = json.loads(payload)
            assert carried["round"] == n
            counted = carried["batch"]
            assert (counted["BatchID"], counted["Total"], counted["Completed"]) == (batch_id, 2, 2)
            assert view_row(producer, batch_id) == {"state": "Finished", "total": 2, "completed": 2,
                                                    "remaining": 0, "callback_at": callback_key}
    finally:
        for conn in (producer, *workers):
            conn.close()


def test_a_batch_counts_each_outcome_and_refuses_items_once_sealed(mssql, live_database: str) -> None:
    conn = connect(db.with_database(mssql.conn_str, live_database))
    try:
        entity = f"outcomes-{secrets.token_hex(4)}"
        batch_id = batches.open_batch(conn, "SyncQueue", "InventorySync", entity_key=entity)
        rows = batches.add_jobs(conn, "SyncQueue", [Job("CustomerSync", f"{entity}-{x}") for x in "abc"],
                                batch_id=batch_id)
        keys = [r[0] for r in rows]
        db.call(conn, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=keys[0])
        batches.seal_batch(conn, batch_id)
        with pytest.raises(db.SqlError) as sealed:
            batches.add_jobs(conn, "SyncQueue", [Job("CustomerSync", f"{entity}-late")], batch_id=batch_id)
        assert sealed.value.number == Msg.BatchSealed
        db.call(conn, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=keys[1])
        assert db.query(conn.cursor(), CALLBACKS, entity) == []  # one item is left
        db.call(conn, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=keys[2])

        [(_, payload)] = db.query(conn.cursor(), CALLBACKS, entity)
        counted = json.loads(payload)["batch"]
        assert (counted["Total"], counted["Cancelled"], counted["Completed"]) == (3, 3, 0)
        [progress] = [b for b in batches.recent(conn, limit=50) if b.batch_id == batch_id]
        assert (progress.state, progress.cancelled, progress.remaining) == ("Finished", 3, 0)
    finally:
        conn.close()


def test_sealing_a_batch_whose_items_all_finished_enqueues_its_callback(mssql, live_database: str) -> None:
    conn = connect(db.with_database(mssql.conn_str, live_database))
    try:
        entity = f"sealed-late-{secrets.token_hex(4)}"
        opened = db.call(conn, "dbo.Open_QueueBatch_trx", CallbackQueue="SyncQueue",
                         CallbackType="InventorySync", CallbackEntityKey=entity)
        batch_id = opened.result_sets[0][0][0]
        [row] = batches.add_jobs(conn, "SyncQueue", [Job("CustomerSync", f"{entity}-a")], batch_id=batch_id)
        db.call(conn, "dbo.Cancel_SyncQueue_trx", EnqueuedAt=row[0])
        assert db.query(conn.cursor(), CALLBACKS, entity) == []  # not sealed: no callback yet

        sealed = db.call(conn, "dbo.Seal_QueueBatch_trx", BatchID=batch_id)

        assert sealed.columns[0][:3] == ["BatchID", "Name", "State"]
        assert sealed.result_sets[0][0][2] == "Finished"
        assert len(db.query(conn.cursor(), CALLBACKS, entity)) == 1
    finally:
        conn.close()


def test_the_roles_open_fill_seal_finish_and_watch_a_batch(member) -> None:
    """Each step as the role that takes it: a producer opens, fills and seals; a worker's
    report finishes the batch (declaring the batch's count list and the callback queue's item
    list: their types' grants); a monitor reads the progress."""
    producer, worker, monitor = member("QueueProducer")(), member("QueueWorker")(), member("QueueMonitor")()
    entity = f"roles-{secrets.token_hex(4)}"
    batch_id = batches.open_batch(producer, "SyncQueue", "InventorySync", entity_key=entity)
    # the highest priority, so that the worker's claim takes it before any other test's item
    batches.add_jobs(producer, "SyncQueue", [Job("CustomerSync", f"{entity}-a", priority=32767)],
                     batch_id=batch_id)
    batches.seal_batch(producer, batch_id)

    for _ in range(20):  # another test's item taken back from a dead worker comes first: release it
        key, token = claim(worker, "roles/worker")
        [(claimed,)] = db.query(worker.cursor(), "SELECT v.EntityKey FROM dbo.Worker_SyncQueue_V AS v "
                                                 "WHERE v.EnqueuedAt = ?;", key)
        if claimed == f"{entity}-a":
            break
        db.call(worker, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status="Pending")
    assert claimed == f"{entity}-a"
    db.call(worker, "dbo.Modify_SyncQueue_trx", EnqueuedAt=key, UpdatedAt=token, Status="Completed")

    assert len(db.query(worker.cursor(), CALLBACKS, entity)) == 1
    [progress] = [b for b in batches.recent(monitor, limit=100) if b.batch_id == batch_id]
    assert (progress.state, progress.completed, progress.remaining) == ("Finished", 1, 0)

"""A worker's loop and the feeder, run in this process against fake procedure calls (the
processes, the barrier and the server are the live test's)."""

from __future__ import annotations

import multiprocessing
import queue
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from bench import workers
from bench.workers import Arm, Feeder, work
from relq import db

T0 = datetime(2024, 5, 1, 10, 0, 0)
COLUMNS = ["EnqueuedAt", "UpdatedAt", "LeaseUntil", "AttemptNum"]


class FakeConnection:
    timeout = 0

    def cursor(self) -> object:
        return object()

    def close(self) -> None:
        pass


class FakeServer:
    """Next_ hands out ``items`` keys, then nothing; Modify_ completes what was claimed.
    The first claim is a deadlock victim."""

    def __init__(self, items: int) -> None:
        self.left = items
        self.calls: list[str] = []
        self.completed: list[datetime] = []
        self.deadlocked = False

    def call(self, conn: Any, procedure: str, **params: Any) -> db.CallResult:
        self.calls.append(procedure)
        if procedure == "dbo.Next_SyncQueue_trx":
            if not self.deadlocked:
                self.deadlocked = True
                raise db.SqlError([db.ServerMessage(1205, "chosen as the deadlock victim", "40001")])
            if self.left == 0:
                return db.CallResult(0, [[]], [COLUMNS])
            self.left -= 1
            key = T0 + timedelta(microseconds=self.left)
            return db.CallResult(0, [[(key, key, T0, 1)]], [COLUMNS])
        if procedure == "dbo.Modify_SyncQueue_trx":
            assert params["Status"] == "Completed"
            self.completed.append(params["EnqueuedAt"])
            return db.CallResult(0, [[]], [["EnqueuedAt"]])
        raise AssertionError(procedure)


def test_a_worker_claims_completes_counts_and_times_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(items=25)
    monkeypatch.setattr(workers.db, "connect", lambda conn_str: FakeConnection())
    monkeypatch.setattr(workers.db, "call", server.call)
    taken = multiprocessing.Value("q", 0)
    results: queue.Queue = queue.Queue()
    arm = Arm("1 worker", "SyncQueue", workers=1, seconds=0.3)
    work("DRIVER=x", arm, 0, threading.Barrier(1), taken, results)
    out = results.get_nowait()
    assert "error" not in out
    assert out["items"] == 25 == len(server.completed) == taken.value
    assert len(out["claim_s"]) == 25 and len(out["report_s"]) == 25  # empty claims are counted, not timed
    assert out["empty"] > 0
    assert out["deadlocks"] == 1
    assert out["elapsed"] >= 0.3


def test_a_worker_that_fails_says_why_and_breaks_the_barrier(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(conn: Any, procedure: str, **params: Any) -> db.CallResult:
        denied = db.ServerMessage(229, "EXECUTE permission was denied", "42000")
        raise db.SqlError([denied], context=procedure)

    monkeypatch.setattr(workers.db, "connect", lambda conn_str: FakeConnection())
    monkeypatch.setattr(workers.db, "call", refuse)
    barrier = threading.Barrier(1)
    results: queue.Queue = queue.Queue()
    work("DRIVER=x", Arm("1 worker", "SyncQueue", workers=1, seconds=5), 3, barrier,
         multiprocessing.Value("q", 0), results)
    out = results.get_nowait()
    assert out == {"slot": 3, "error": "SqlError: dbo.Next_SyncQueue_trx: SQL Server error 229: EXECUTE "
                                       "permission was denied"}
    assert barrier.broken


def test_the_feeder_writes_what_the_workers_took_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[int] = []
    taken = multiprocessing.Value("q", 4_500)
    go, stop = threading.Event(), threading.Event()
    feeder = Feeder("DRIVER=x", "SyncQueue", taken, go, stop)

    def insert(cursor: Any, sql: str, count: int) -> list:
        assert sql is workers.backlog.SYNC_QUEUE
        written.append(count)
        if sum(written) == 4_500:
            stop.set()
        return []

    monkeypatch.setattr(workers.db, "query", insert)
    feeder.loop(FakeConnection())
    assert written == [2_000, 2_000, 500]
    assert feeder.fed == 4_500

"""A worker's loop and the feeder, run in this process against fake procedure calls (the
processes, the barrier and the server are the live test's)."""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from bench import workers
from bench.counters import Snapshot
from bench.workers import Arm, ArmResult, Feeder, work
from relq import db
from relq.errors import RelqError
from tests.results import CLAIM_COLUMNS as COLUMNS

T0 = datetime(2024, 5, 1, 10, 0, 0)


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
    arm = Arm("1 worker", "SyncQueue", workers=1, seconds=0.3, warmup=0)
    work("DRIVER=x", arm, 0, threading.Barrier(1), taken, results)
    out = results.get_nowait()
    assert "error" not in out
    assert out["items"] == 25 == len(server.completed) == taken.value
    assert len(out["claim_s"]) == 25 and len(out["report_s"]) == 25  # empty claims are counted, not timed
    assert out["empty"] > 0
    assert out["deadlocks"] == 1
    assert out["elapsed"] >= 0.3
    assert out["warmup_items"] == 0


class RecordingBarrier:
    """A barrier of one that notes what the server had done when the worker reached it."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.completed_then: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        self.completed_then = len(self.server.completed)
        return 0

    def abort(self) -> None:
        raise AssertionError("no abort expected")


def test_a_worker_warms_up_untimed_before_the_barrier(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(items=25)
    monkeypatch.setattr(workers.db, "connect", lambda conn_str: FakeConnection())
    monkeypatch.setattr(workers.db, "call", server.call)
    taken = multiprocessing.Value("q", 0)
    results: queue.Queue = queue.Queue()
    barrier = RecordingBarrier(server)
    work("DRIVER=x", Arm("1 worker", "SyncQueue", workers=1, seconds=0.1, warmup=0.2), 0, barrier, taken,
         results)
    out = results.get_nowait()
    assert barrier.completed_then == 25  # every item went in the warm-up, before the barrier
    assert out["warmup_items"] == 25 and taken.value == 25  # the feeder refills the warm-up's items too
    assert out["items"] == 0 and out["claim_s"] == [] and out["report_s"] == []  # none of it is timed
    assert out["deadlocks"] == 0  # the warm-up's deadlock victim is not the arm's


def test_a_worker_process_ignores_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(workers, "work", lambda *args: seen.append(signal.getsignal(signal.SIGINT)))
    previous = signal.getsignal(signal.SIGINT)
    try:
        workers.worker_main("DRIVER=x", Arm("1 worker", "SyncQueue", workers=1), 0, None, None, None)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIG_IGN]


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


# -- the parent's side: the barrier, the processes, the results ----------------------------------------------


class FakeProcess:
    def __init__(self, exitcode: int | None = None, pid: int | None = 4242, stays: bool = False) -> None:
        self.exitcode, self.pid, self.stays = exitcode, pid, stays
        self.calls: list[str] = []

    def join(self, timeout: float | None = None) -> None:
        self.calls.append("join")

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None and self.stays

    def terminate(self) -> None:
        self.calls.append("terminate")
        self.exitcode = -15


def test_a_worker_that_died_before_the_barrier_aborts_it_at_once() -> None:
    barrier = threading.Barrier(3)  # the parent and two workers, of which one never arrives
    broke: list[bool] = []

    def alive_worker() -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            broke.append(True)

    waiting = threading.Thread(target=alive_worker)
    waiting.start()
    why = workers.wait_at_barrier(barrier, [FakeProcess(), FakeProcess(exitcode=1)], timeout=30)
    waiting.join()
    assert why == "1 worker process(es) exited before the start"  # not "did not all start within 30 s"
    assert barrier.broken and broke == [True]


def test_the_barrier_passes_when_every_worker_arrives() -> None:
    barrier = threading.Barrier(2)
    worker = threading.Thread(target=barrier.wait)
    worker.start()
    assert workers.wait_at_barrier(barrier, [FakeProcess()], timeout=30) is None
    worker.join()


def test_processes_left_running_are_terminated_then_joined() -> None:
    done, stuck, never_started = FakeProcess(exitcode=0), FakeProcess(stays=True), FakeProcess(pid=None)
    workers.stop_processes([done, stuck, never_started], grace=0)
    assert done.calls == ["join"]
    assert stuck.calls == ["join", "terminate", "join"]
    assert never_started.calls == []


def arm(**kwargs: Any) -> Arm:
    return Arm(**{"label": "8 workers", "queue": "SyncQueue", "workers": 2, "seconds": 2.0, **kwargs})


def out(slot: int, elapsed: float, items: int, *, claims: list[float] | None = None, warm: int = 0) -> dict:
    claim_s = claims if claims is not None else [0.001] * items
    return {"slot": slot, "elapsed": elapsed, "items": items, "empty": 1, "claim_s": claim_s,
            "report_s": [0.002] * len(claim_s), "deadlocks": 1, "warmup_items": warm}


def test_collect_returns_every_workers_result() -> None:
    results: queue.Queue = queue.Queue()
    for slot in (0, 1):
        results.put(out(slot, 2.0, 10))
    outs = workers._collect(results, [FakeProcess(), FakeProcess()], arm(), None)
    assert [o["slot"] for o in outs] == [0, 1]


def test_collect_names_the_workers_errors_once_each() -> None:
    results: queue.Queue = queue.Queue()
    for slot in (0, 1, 2):
        results.put({"slot": slot, "error": "another worker failed to start"} if slot else
                    {"slot": slot, "error": "SqlError: login failed"})
    with pytest.raises(RelqError) as caught:
        workers._collect(results, [FakeProcess()] * 3, arm(), None)
    assert str(caught.value) == "8 workers: SqlError: login failed; another worker failed to start"


def test_collect_says_when_a_worker_process_died() -> None:
    results: queue.Queue = queue.Queue()
    results.put(out(0, 2.0, 10))
    with pytest.raises(RelqError, match=r"^8 workers: 1 worker process\(es\) died$"):
        workers._collect(results, [FakeProcess(exitcode=0), FakeProcess(exitcode=-9)], arm(), None)


def test_collect_gives_up_after_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "START_TIMEOUT_S", 0)
    monkeypatch.setattr(workers, "FINISH_MARGIN_S", 0)
    with pytest.raises(RelqError, match="the workers did not finish in time"):
        workers._collect(queue.Queue(), [FakeProcess()], arm(seconds=0.01), None)


class Fed:
    fed = 123


def test_an_arms_rate_is_its_items_over_the_slowest_workers_time() -> None:
    result = workers._result(arm(), [out(0, 2.0, 300, warm=7), out(1, 2.5, 200, warm=5)],
                             Snapshot(4, 0), Fed())  # type: ignore[arg-type]
    assert result.items == 500 and result.elapsed == 2.5
    assert result.items_per_s == 200.0  # 500 items / 2.5 s, not / 2.0 nor / 4.5
    assert result.claims == 500 and result.claim_ms is not None and result.claim_ms.count == 500
    assert result.report_ms is not None and result.report_ms.p50 == pytest.approx(2.0)
    assert (result.empty_claims, result.deadlock_retries, result.fed, result.warmup_items) == (2, 2, 123, 12)
    assert result.problems == []


def test_an_arm_that_completed_nothing_is_a_problem() -> None:
    result = workers._result(arm(), [out(0, 2.0, 0), out(1, 2.0, 0)], Snapshot(0, 0), Fed())  # type: ignore[arg-type]
    assert result.claim_ms is None
    assert result.problems == ["no item was completed during the arm: it measured nothing"]
    received = workers._result(arm(queue="HeapQueue"), [out(0, 2.0, 0)], Snapshot(0, 0), Fed())  # type: ignore[arg-type]
    assert received.problems == ["no item was received during the arm: it measured nothing"]


def verified(monkeypatch: pytest.MonkeyPatch, processing: int, completed: int, items: int = 500,
             warm: int = 12) -> ArmResult:
    answers = {workers.PROCESSING: [(processing,)], workers.COMPLETED_SINCE: [(completed,)]}
    monkeypatch.setattr(workers.db, "query", lambda cursor, sql, *params: answers[sql])
    result = ArmResult(arm(), 2.5, items, items, 0, None, None, 0, Snapshot(0, 0), 0, warmup_items=warm)
    workers._verify(object(), result, T0)
    return result


def test_verify_passes_when_the_table_shows_every_item_completed(monkeypatch: pytest.MonkeyPatch) -> None:
    result = verified(monkeypatch, processing=0, completed=512)
    assert (result.processing_left, result.completed_in_db, result.problems) == (0, 512, [])


def test_verify_says_what_was_left_and_what_was_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    result = verified(monkeypatch, processing=3, completed=509)
    assert result.problems == [
        "3 item(s) left in Processing",
        "the workers completed 512 items (500 in the arm, 12 in the warm-up), the table shows 509 completed"]


def test_no_feeder_statement_reaches_lock_escalation_however_far_behind_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SQL Server escalates one statement's locks to a table lock at 5,000 locks, which would
    stall every claim: the feeder must never write that many rows in one statement."""
    written: list[int] = []
    taken = multiprocessing.Value("q", 1_000_000)
    stop = threading.Event()
    feeder = Feeder("DRIVER=x", "HeapQueue", taken, threading.Event(), stop)

    def insert(cursor: Any, sql: str, count: int) -> list:
        written.append(count)
        if sum(written) >= 1_000_000:
            stop.set()
        return []

    monkeypatch.setattr(workers.db, "query", insert)
    feeder.loop(FakeConnection())
    assert sum(written) == 1_000_000
    assert max(written) < 5_000

"""The idle gate: the idle slots of one worker share one poll. Counted claims under a fake
clock, never wall time: the gate's pauses advance a fake clock instead of sleeping, and park
(until the worker stops) once the clock would pass the scenario's horizon."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from itertools import pairwise

import pytest

from relq.worker import idle, runtime
from relq.worker.handlers import Handlers, Item
from relq.worker.idle import IdleGate
from relq.worker.runtime import Settings, Worker
from tests.worker.memory_queue import MemoryProcedures, MemoryQueue, link_failure

TIMEOUT_S = 20


class FakeTimeGate(IdleGate):
    """An IdleGate on a fake clock. Its first pause waits until ``slots`` slots are in the gate
    (so that every slot's own first claim comes at time 0) and, when ``release`` is given, until
    that event is set; each pause then advances the clock, or parks until stop once the clock
    would pass ``horizon``."""

    def __init__(self, slots: int, horizon: float, release: threading.Event | None = None,
                 **kwargs: float) -> None:
        self.now = 0.0
        self.slots, self.horizon, self.release = slots, horizon, release
        self.parked = threading.Event()
        super().__init__(clock=lambda: self.now, **kwargs)

    def pause(self, seconds: float) -> None:
        while self.idle_slots() < self.slots and not self._stopped:
            self._cond.wait(0.01)  # joining a gate notifies nobody: look again
        if self.release is not None:
            self._cond.release()
            try:
                self.release.wait(TIMEOUT_S)
            finally:
                self._cond.acquire()
            self.release = None
        if self.now + seconds > self.horizon + 1e-9:
            self.parked.set()
            while not self._stopped:
                self._cond.wait()
            return
        self.now += seconds


class Counted:
    """A slot's procedures that log each claim: (fake time, slot, type)."""

    def __init__(self, inner: MemoryProcedures, gate: Callable[[], FakeTimeGate], log: list) -> None:
        self.inner, self.gate, self.log = inner, gate, log
        self.queue = inner.queue

    def claim(self, locked_by: str, batch_size: int, wait_ms: int, type: str | None = None) -> list:
        self.log.append((self.gate().now, locked_by, type))
        return self.inner.claim(locked_by, batch_size, wait_ms, type)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def fake_worker(queue: MemoryQueue, handlers: Handlers, gate: FakeTimeGate, claims: list,
                **settings) -> tuple[Worker, threading.Thread]:
    name = settings.pop("name", "idle")
    options = {"concurrency": gate.slots, "grace_s": 60.0} | settings
    worker = Worker(Settings(queue.queue, name, **options), handlers,
                    lambda: Counted(queue.procedures(), lambda: worker.idle, claims))
    worker.idle = gate
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return worker, thread


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def stop(worker: Worker, thread: threading.Thread) -> None:
    worker.stop()
    thread.join(TIMEOUT_S)  # the grace is 60 s: only woken slots end before this
    assert not thread.is_alive()


@pytest.mark.parametrize("slots", [1, 4, 16])
def test_idle_slots_make_one_claim_per_poll_between_them_not_one_each(slots: int) -> None:
    queue, claims = MemoryQueue(), []
    horizon = 60.0
    gate = FakeTimeGate(slots, horizon)
    worker, thread = fake_worker(queue, Handlers(), gate, claims)
    assert gate.parked.wait(TIMEOUT_S)
    stop(worker, thread)

    first = [c for c in claims if c[0] == 0.0]
    polls = [t for t, _, _ in claims if t > 0.0]
    assert len(first) == slots and len({name for _, name, _ in first}) == slots  # each slot's own claim
    assert len(polls) == gate.polls  # after it, only the poller claims
    gaps = [b - a for a, b in zip([0.0, *polls], polls, strict=False)]
    assert min(gaps) >= idle.POLL_S - 1e-9  # never more often than IDLE_CLAIMS_PER_S, whatever the slots
    # the first FAST_FOR_S idle seconds are polled every POLL_S: a new item waits at most about POLL_S
    fast = [g for t, g in zip(polls, gaps, strict=True) if t <= idle.FAST_FOR_S + 1e-9]
    assert fast and all(g == pytest.approx(idle.POLL_S) for g in fast)
    assert len(fast) == pytest.approx(idle.FAST_FOR_S * idle.IDLE_CLAIMS_PER_S, abs=1)
    # then the pause grows to the cap and stays there: the poll goes on, at IDLE_CLAIMS_PER_S_LATER
    assert gaps[-1] == pytest.approx(idle.POLL_CAP_S)
    assert all(a <= b + 1e-9 for a, b in pairwise(gaps))  # the pause only grows
    # the bound the bench checks: claims per idle slot-second
    per_slot_second = len(polls) / (slots * horizon)
    assert per_slot_second <= idle.IDLE_CLAIMS_PER_S / slots
    assert len(polls) <= horizon * idle.IDLE_CLAIMS_PER_S
    late = [t for t in polls if t > idle.FAST_FOR_S + 5]  # from 15 s on, the cap holds
    assert len(late) <= (horizon - idle.FAST_FOR_S - 5) * idle.IDLE_CLAIMS_PER_S_LATER + 1


def test_a_lower_cap_keeps_the_pause_at_the_first_poll_interval() -> None:
    queue, claims = MemoryQueue(), []
    gate = FakeTimeGate(3, 30.0, cap_s=idle.POLL_S)  # --max-poll-ms 100
    worker, thread = fake_worker(queue, Handlers(), gate, claims)
    assert gate.parked.wait(TIMEOUT_S)
    stop(worker, thread)
    polls = [t for t, _, _ in claims if t > 0.0]
    assert len(polls) == pytest.approx(30.0 * idle.IDLE_CLAIMS_PER_S, abs=1)


def test_the_poller_finding_work_wakes_every_idle_slot_to_claim_at_once() -> None:
    """Four items come while four slots are idle; the poller claims one, and the handlers meet at a
    barrier of four: only if the other three slots claimed without a poll of their own (the gate's
    later pauses never end) do all four items run."""
    queue, claims, handlers = MemoryQueue(), [], Handlers()
    barrier = threading.Barrier(4, timeout=TIMEOUT_S)

    def meet(item: Item) -> str:
        barrier.wait()  # breaks (an Error) unless four slots hold an item each at once
        return "ok"

    handlers.register("Notification", "ResetPassword")(meet)
    release = threading.Event()
    gate = FakeTimeGate(4, idle.POLL_S, release)  # one pause may pass, after the release
    worker, thread = fake_worker(queue, handlers, gate, claims)
    until(lambda: gate.idle_slots() == 4)
    keys = [queue.add() for _ in range(4)]
    release.set()
    until(queue.settled)
    stop(worker, thread)
    assert [queue.statuses()[k] for k in keys] == ["Completed"] * 4
    assert gate.polls == 1  # the one poll found work; the woken slots claimed by themselves
    holders = {queue.rows[k].locked_by for k in keys}
    assert len(holders) == 4  # one item for each slot


def test_stop_wakes_every_idle_slot_at_once() -> None:
    queue, claims = MemoryQueue(), []
    gate = FakeTimeGate(5, 0.0)  # the poller's first pause already parks: nothing ends it but stop
    worker, thread = fake_worker(queue, Handlers(), gate, claims)
    assert gate.parked.wait(TIMEOUT_S)
    assert gate.idle_slots() == 5
    worker.stop()
    until(lambda: gate.idle_slots() == 0)
    thread.join(TIMEOUT_S)
    assert not thread.is_alive()
    assert len(claims) == 5 and gate.polls == 0


def test_a_signal_stops_idle_slots_too() -> None:
    """request_stop (what a signal handler calls) goes through stop(), which wakes the gate."""
    queue, claims = MemoryQueue(), []
    gate = FakeTimeGate(3, 0.0)
    worker, thread = fake_worker(queue, Handlers(), gate, claims)
    assert gate.parked.wait(TIMEOUT_S)
    worker.request_stop()
    thread.join(TIMEOUT_S)
    assert not thread.is_alive() and gate.idle_slots() == 0


def test_workers_of_different_job_types_poll_apart_and_wake_only_their_own_slots() -> None:
    """An empty claim for one type says nothing about another: each worker (one queue, one type)
    has its own gate; work of one type wakes none of the other type's slots."""
    queue, handlers, claims_a, claims_b = MemoryQueue(), Handlers(), [], []
    handlers.register("Notification", "ResetPassword")(lambda item: "reset")
    handlers.register("Notification", "Welcome")(lambda item: "welcome")
    gate_a = FakeTimeGate(2, 0.0)  # parks at once: type A's poll never runs
    release = threading.Event()
    gate_b = FakeTimeGate(2, idle.POLL_S, release)
    worker_a, thread_a = fake_worker(queue, handlers, gate_a, claims_a, type="ResetPassword", name="a")
    worker_b, thread_b = fake_worker(queue, handlers, gate_b, claims_b, type="Welcome", name="b")
    assert gate_a.parked.wait(TIMEOUT_S)
    until(lambda: gate_b.idle_slots() == 2)
    welcome = queue.add("Welcome")
    release.set()
    until(queue.settled)
    stop(worker_b, thread_b)
    stop(worker_a, thread_a)
    assert queue.rows[welcome].locked_by.startswith("b/")
    assert len(claims_a) == 2 and {t for _, _, t in claims_a} == {"ResetPassword"}  # A was never woken
    assert {t for _, _, t in claims_b} == {"Welcome"}


def test_a_poll_that_fails_hands_the_poll_to_another_idle_slot(monkeypatch) -> None:
    original = runtime.IdleBackoff
    monkeypatch.setattr(runtime, "IdleBackoff", lambda: original(first=0.0, cap=0.0))
    queue, claims = MemoryQueue(), []
    gate = FakeTimeGate(3, 1.0)
    worker, thread = fake_worker(queue, Handlers(), gate, claims)
    until(lambda: gate.idle_slots() == 3)
    queue.fail("claim", link_failure())  # the next poll's connection breaks
    assert gate.parked.wait(TIMEOUT_S)
    until(lambda: gate.idle_slots() == 3)  # the failed slot reconnected and came back
    stop(worker, thread)
    assert worker.failure is None
    assert queue.closed >= 1  # the broken connection was closed for a new one
    polls = [t for t, _, _ in claims if t > 0.0]
    assert polls and max(polls) == pytest.approx(1.0)  # the poll went on to the horizon


def test_the_real_pause_ends_at_stop_not_at_its_end() -> None:
    gate = IdleGate(poll_s=60.0, cap_s=60.0)
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(gate.wait(lambda: pytest.fail("claimed"))),
                              daemon=True)
    waiter.start()
    until(lambda: gate.idle_slots() == 1)
    gate.stop()
    waiter.join(TIMEOUT_S)  # a minute's pause, ended by stop
    assert not waiter.is_alive() and result == [[]] and gate.polls == 0


def test_the_cap_may_not_be_below_the_poll_interval() -> None:
    with pytest.raises(ValueError, match="cap"):
        IdleGate(poll_s=0.1, cap_s=0.05)
    with pytest.raises(ValueError):
        Worker(Settings("Notification", "w", max_poll_s=0.01), Handlers(), MemoryQueue().procedures)


def test_a_worker_in_the_shared_poll_takes_a_new_item_with_its_handler() -> None:
    """The default settings, real time: an item added to an idle worker is done (no bound on
    how fast: the counted tests above show the poll's schedule)."""
    queue, handlers, done = MemoryQueue(), Handlers(), threading.Event()

    def handle(item: Item) -> str:
        done.set()
        return "ok"

    handlers.register("Notification", "ResetPassword")(handle)
    worker = Worker(Settings("Notification", "real", concurrency=4), handlers, queue.procedures)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    until(lambda: worker.idle.idle_slots() == 4)
    queue.add()
    assert done.wait(TIMEOUT_S)
    stop(worker, thread)

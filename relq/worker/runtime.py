"""The worker: N slots, each on its own connection, that claim, run the handler,
keep the leases while they hold items, and report; and a clean shutdown.

A slot claims only with nothing in hand (the database hands a slot's unfinished
items back when a slot of the same name claims again, so a name belongs to one
slot), and keeps the lease of every item of its batch until it reports on it.
When the worker stops, slots stop claiming, release the items of their batch
they have not started (reported Pending: the attempt is given back), and finish
the one in hand within the grace period; what is still running then is
released too, so nothing is left Processing by a clean shutdown.

A call that fails for a reason that goes away (a broken connection, a deadlock, a lock
timeout: procedures.retryable) is made again, on a new connection when the old one broke.

Idle slots wait in the worker, not in SQL Server: a slot whose claim came back empty
joins the worker's idle gate (relq.worker.idle), where one slot polls for all. With
Settings.wait_ms above 0 each slot's claim waits in SQL Server instead (a long-poll).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TypeVar

from relq import db
from relq.errors import Msg
from relq.worker.handlers import MAX_SNOOZE_S, Cancel, Handlers, Item, NextStep, Permanent, Snooze
from relq.worker.idle import IDLE_CLAIMS_PER_S, IDLE_CLAIMS_PER_S_LATER, POLL_CAP_S, POLL_S, IdleGate
from relq.worker.procedures import FATAL, Claim, Lost, Procedures, retryable
from relq.worker.stats import Stats

log = logging.getLogger("relq.worker")

ERROR_TEXT = 2000  # how much of an exception's message is recorded
MAX_STEP = 50  # dbo.QueueStep
# Seconds between the tries of a call that failed for a reason that goes away, and how long
# its tries may go on in all, the calls' own time included: the slot's lock is held meanwhile,
# so the other items' renewals wait (a lease is 300 s by default, renewed every third of it).
# A call that timed out (HYT00, after the query timeout) is past the window already: not retried.
RETRY_WAITS = (0.5, 1.0, 2.0, 4.0, 8.0)
RETRY_WINDOW_S = 20.0
T = TypeVar("T")
# IDLE_CLAIMS_PER_S, from relq.worker.idle: what an idle worker costs, at most this many claim calls
# a second whatever its slot count, each one short transaction; nothing waits in SQL Server.
__all__ = ["IDLE_CLAIMS_PER_S", "IDLE_CLAIMS_PER_S_LATER", "POLL_S", "Held", "IdleBackoff", "Settings",
           "Worker"]


@dataclass(frozen=True)
class Settings:
    queue: str
    name: str  # the worker's name; slot n claims as "<name>/<n>"
    concurrency: int = 1
    batch_size: int = 1
    wait_ms: int = 0  # 0: idle slots share one poll in the worker; above 0: each claim waits in SQL Server
    grace_s: float = 30.0
    type: str | None = None  # claim only this job type (queues whose claim takes @Type)
    max_poll_s: float = POLL_CAP_S  # the shared poll's longest pause once idle a while (POLL_S: no longer)


class IdleBackoff:
    """Sleeps that grow while calls keep failing and start again on success: the pause
    before a slot reconnects after a failed claim."""

    def __init__(self, first: float = 0.05, factor: float = 2.0, cap: float = 2.0) -> None:
        self.first, self.factor, self.cap = first, factor, cap
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self.cap, self._next * self.factor)
        return delay

    def reset(self) -> None:
        self._next = self.first


@dataclass(frozen=True)
class Report:
    """What a handler's run comes to, as Modify_ takes it: the status, the step reached, the
    response and error to record, and for a snooze how long until the item is due again."""

    status: str
    step: str | None = None
    response: str | None = None
    error: str | None = None
    snooze_s: float | None = None


class Held:
    """The claims one slot holds, kept alive from a thread of their own: each lease is
    renewed at a third of its length, whether its item runs now or waits its turn in
    the batch. Every call on the slot's connection goes through here, one at a time
    (a pyodbc connection serves one thread at a time), and always with the item's
    latest token (a renewal moves it). Lease lengths are the server's (LeaseUntil
    less the token of the same change), and so is a snooze's due time (the token, the
    server's clock at its change, plus the time since it came back), so a skewed local
    clock does not matter. A renewal refused because the item is no longer this
    attempt's is recorded in ``lost``, which the item's handler reads as Item.lost.
    ``connect`` opens a new connection when the slot's breaks (``procedures`` is then
    the new one, for the slot to keep)."""

    def __init__(self, procedures: Procedures, claims: list[Claim],
                 connect: Callable[[], Procedures] | None = None) -> None:
        self.procedures = procedures
        self.connect = connect
        self.lost: dict[datetime, str] = {}  # key -> why: taken away while held
        self._claims = {c.key: c for c in claims}
        self._seen = dict.fromkeys(self._claims, time.monotonic())  # key -> when its token came back
        self._started: set[datetime] = set()  # keys whose handler has begun: only their own report ends them
        self._closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Held:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_exc: object) -> None:
        if exc_type is None:
            self.close()
        else:  # the slot is dying: its claims stay here for the worker to release
            self._stop.set()

    def close(self) -> list[Claim]:
        """Stop renewing; later reports raise Lost. Returns the claims still held."""
        self._stop.set()
        with self._lock:
            self._closed = True
            left = list(self._claims.values())
            self._claims.clear()
        return left

    def held_keys(self) -> list[datetime]:
        with self._lock:
            return list(self._claims)

    def start(self, key: datetime) -> Item:
        """Read the item for its handler and mark it started, in one step under the lock, so
        that a release of the unstarted items either comes first (and this raises Lost) or
        leaves it alone."""
        with self._lock:
            claim = self._held(key)
            item = self._call(lambda p: p.read(claim))
            self._started.add(key)
            return replace(item, watch=lambda: self.lost.get(key))

    def release_unstarted(self, key: datetime, why: str) -> None:
        """Give an item whose handler has not begun back to the queue (Pending). Lost when it
        has begun or is no longer held: its own report, if any, ends it."""
        with self._lock:
            if key in self._started:
                raise Lost(key, Msg.StaleToken, "its handler has begun: its own report ends it")
            claim = self._held(key)
            try:
                # Not made again (_call): its lease brings it back all the same, and a shutdown must
                # not wait out every item's retries on a connection that is away.
                self.procedures.report(claim, "Pending", error=f"released: {why}")
            finally:  # reported or not (its lease then brings it back), no longer renewed here
                del self._claims[key]

    def report(self, key: datetime, report: Report) -> tuple[Claim, str]:
        """Report on the item; it stays held only after a step advance, or when the
        report failed for another reason than Lost (so that it can be tried again)."""
        with self._lock:
            claim = self._held(key)
            due = None
            if report.snooze_s is not None:  # by the server's clock: its token, and the time since
                due = claim.token + timedelta(seconds=report.snooze_s + time.monotonic() - self._seen[key])
            try:
                new, final = self._call(lambda p: p.report(
                    claim, report.status, step=report.step, response=report.response, error=report.error,
                    scheduled_for=due))
            except Lost:
                del self._claims[key]
                raise
            if report.status == "Processing":
                self._keep(new)
            else:
                del self._claims[key]
            return new, final

    def drop(self, key: datetime) -> None:
        """Stop renewing an item: its lease brings it back to the queue."""
        with self._lock:
            self._claims.pop(key, None)

    def _call(self, call: Callable[[Procedures], T]) -> T:
        """``call`` on the slot's connection; the caller holds the lock. A call that failed for
        a reason that goes away (procedures.retryable) is made again after each of RETRY_WAITS,
        on a new connection when the old one broke, within RETRY_WINDOW_S and until this
        closes. A call that committed just before its connection broke finds, made again, its
        token moved: Lost (a report then had ended the item; an extend loses it to its lease,
        the one case a broken connection costs an item its attempt)."""
        deadline = time.monotonic() + RETRY_WINDOW_S
        for wait in (*RETRY_WAITS, None):
            try:
                return call(self.procedures)
            except db.SqlError as exc:
                if (wait is None or not retryable(exc) or time.monotonic() + wait > deadline
                        or self._stop.wait(wait)):
                    raise
                log.warning(json.dumps({"queue": self.procedures.queue, "event": "call-failed",
                                        "retry_s": wait, "error": _text(exc)}))
                if exc.broken and self.connect is not None:
                    try:
                        new = self.connect()
                    except Exception as again:  # still away: the next try fails and comes back here
                        log.error(json.dumps({"queue": self.procedures.queue, "event": "reconnect-failed",
                                              "error": _text(again)}))
                    else:
                        _close(self.procedures)
                        self.procedures = new
        raise AssertionError("unreachable: the last try returns or raises")

    def _keep(self, claim: Claim) -> None:
        """The item's latest token (the caller holds the lock)."""
        self._claims[claim.key] = claim
        self._seen[claim.key] = time.monotonic()

    def _held(self, key: datetime) -> Claim:
        claim = None if self._closed else self._claims.get(key)
        if claim is None:
            raise Lost(key, Msg.StaleToken, self.lost.get(key, "the item is no longer held by this worker"))
        return claim

    def _interval(self) -> float:
        with self._lock:
            leases = [(c.lease_until - c.token).total_seconds() for c in self._claims.values()]
        return min(60.0, max(0.5, min(leases, default=3.0) / 3))

    def _run(self) -> None:
        while not self._stop.wait(self._interval()):
            for key in self.held_keys():
                with self._lock:
                    claim = self._claims.get(key)
                    if claim is None or self._closed:
                        continue
                    try:
                        self._keep(self._call(lambda p, c=claim: p.extend(c)))
                    except Lost as exc:
                        del self._claims[key]
                        self.lost[key] = str(exc)
                    except Exception as exc:  # tried again next time; the lease has time left
                        log.warning(json.dumps({"queue": self.procedures.queue, "key": key.isoformat(),
                                                "event": "extend-failed", "error": _text(exc)}))


@dataclass
class Slot:
    number: int
    procedures: Procedures
    held: Held | None = None  # the claims of its current batch
    claiming: bool = False  # inside a claim (a long-poll may take wait_ms)


class Worker:
    def __init__(self, settings: Settings, handlers: Handlers,
                 connect: Callable[[], Procedures], stats: Stats | None = None) -> None:
        self.settings = settings
        self.handlers = handlers
        self.connect = connect
        self.stats = stats or Stats()
        self.stopping = threading.Event()
        self.idle = IdleGate(cap_s=settings.max_poll_s)  # where idle slots wait; stop() wakes them
        self.failure: str | None = None  # why the worker stopped by itself, if it did
        self._requested = False  # set from a signal handler: a plain flag, no lock

    def request_stop(self) -> None:
        """Ask the worker to stop; safe from a signal handler (run() notices within 0.5 s)."""
        self._requested = True

    def stop(self) -> None:
        self.stopping.set()
        self.idle.stop()

    def run(self) -> Stats:
        """Run until :meth:`stop` or :meth:`request_stop`, then shut down cleanly."""
        slots = [Slot(n, self.connect()) for n in range(1, self.settings.concurrency + 1)]
        threads = [threading.Thread(target=self._loop, args=(slot,), daemon=True,
                                    name=f"relq-slot-{slot.number}") for slot in slots]
        for t in threads:
            t.start()
        while not self.stopping.wait(0.5):
            if self._requested or not any(t.is_alive() for t in threads):
                self.stop()
        # What a slot holds but has not started goes back at once, not after the grace.
        for slot in slots:
            held = slot.held
            if held is not None:
                for key in held.held_keys():
                    self._release(held, key, "the worker is shutting down")
        deadline = time.monotonic() + self.settings.grace_s
        for slot, t in zip(slots, threads, strict=True):
            # a slot inside a long-poll claim releases what it gets: wait for it
            extra = self.settings.wait_ms / 1000 + 5 if slot.claiming else 0.0
            t.join(max(0.0, deadline - time.monotonic()) + extra)
        releaser: Procedures | None = None
        for slot, t in zip(slots, threads, strict=True):
            held = slot.held
            if not t.is_alive() or held is None:
                continue
            left = held.close()  # the slot's late report now finds nothing to report on
            if left:
                releaser = releaser or self.connect()
                for claim in left:
                    self._release_claim(releaser, claim, "still running when the grace period ended")
        if releaser is not None:
            _close(releaser)
        for slot, t in zip(slots, threads, strict=True):
            if not t.is_alive():  # a slot still running keeps its connection until the process ends
                _close(slot.procedures)
        return self.stats

    # -- one slot ---------------------------------------------------------------------
    def _loop(self, slot: Slot) -> None:
        try:
            self._claim_and_work(slot)
        except BaseException as exc:  # a slot must never die unseen: stop the whole worker
            log.critical(json.dumps({"queue": self.settings.queue, "event": "slot-died",
                                     "slot": slot.number, "error": _text(exc)}))
            self.failure = self.failure or f"slot {slot.number} died: {_text(exc)}"
            if slot.held is not None:
                left = slot.held.close()
                slot.procedures = slot.held.procedures  # a new connection if the old one broke
                for claim in left:
                    self._release_claim(slot.procedures, claim, "its slot died")
            self.stop()

    def _claim_and_work(self, slot: Slot) -> None:
        name = f"{self.settings.name}/{slot.number}"
        backoff = IdleBackoff()  # before reconnecting after a failed claim
        while not self.stopping.is_set():
            slot.claiming = True
            try:
                claims = self._next_claims(slot, name)
            except db.SqlError as exc:
                if exc.number in FATAL:
                    log.critical(json.dumps({"queue": self.settings.queue, "event": "claim-refused",
                                             "slot": name, "error": _text(exc)}))
                    self.failure = self.failure or f"the claim was refused: {_text(exc)}"
                    self.stop()
                    return
                self._reconnect(slot, exc, backoff)
                continue
            except Exception as exc:  # the connection broke: a new one, after a pause
                self._reconnect(slot, exc, backoff)
                continue
            finally:
                slot.claiming = False
            if not claims:  # woken from the idle gate, or stopping
                continue
            backoff.reset()
            self.stats.add("claimed", len(claims))
            with Held(slot.procedures, claims, self.connect) as held:
                slot.held = held
                for n, claim in enumerate(claims):
                    if self.stopping.is_set():
                        for key in held.held_keys():
                            self._release(held, key, "the worker is shutting down")
                        break
                    if not self._work(held, claim):
                        self._leave(held, claims[n + 1:])
                        break
            slot.procedures = held.procedures  # closed: no renewal opens another one now
            slot.held = None

    def _next_claims(self, slot: Slot, name: str) -> list[Claim]:
        """The slot's next batch: claimed at once, or, when none is due, from the idle gate
        (wait_ms 0: [] when woken to claim again, or stopping) or the claim's own long-poll."""
        claims = slot.procedures.claim(name, self.settings.batch_size, self.settings.wait_ms,
                                       self.settings.type)
        if claims:
            self.idle.worked()
            return claims
        if self.settings.wait_ms > 0:
            return claims
        return self.idle.wait(lambda: slot.procedures.claim(name, self.settings.batch_size, 0,
                                                             self.settings.type))

    def _reconnect(self, slot: Slot, exc: BaseException, backoff: IdleBackoff) -> None:
        log.error(json.dumps({"queue": self.settings.queue, "event": "claim-failed",
                              "slot": slot.number, "error": _text(exc)}))
        self.stopping.wait(backoff.next())
        try:
            new = self.connect()
        except Exception as again:  # still away: the next round tries again
            log.error(json.dumps({"queue": self.settings.queue, "event": "reconnect-failed",
                                  "slot": slot.number, "error": _text(again)}))
            return
        _close(slot.procedures)
        slot.procedures = new

    def _work(self, held: Held, claim: Claim) -> bool:
        """Read, run and report one item; False when the connection failed beyond its retries
        (the rest of the batch need not wait its turn for the same)."""
        try:
            item = held.start(claim.key)
        except Lost as exc:
            self._outcome(claim, None, "lost", 0.0, str(exc))
            return True
        except Exception as exc:
            if not retryable(exc):  # no retry cures it (the view missing, a permission denied):
                raise  # the slot dies, its batch is released, and the worker stops saying why
            held.drop(claim.key)  # the connection stays away: this slot's next claim hands it back
            self._outcome(claim, None, "lost", 0.0, f"the item could not be read: {_text(exc)}")
            return False
        started = time.monotonic()
        while True:
            report = self._run_handler(item)
            elapsed = time.monotonic() - started
            try:
                claim, final = held.report(claim.key, report)
            except Lost as exc:
                self._outcome(claim, item, "lost", elapsed, str(exc))
                return True
            except Exception as exc:
                if retryable(exc):  # tried again and again: leave the item to this slot's next
                    held.drop(claim.key)  # claim, or to its lease. Its handler will run again.
                    self._outcome(claim, item, "lost", elapsed, f"the report failed: {_text(exc)}")
                    return False
                # refused for good (a response too long for its column, say): an Error says so
                report = Report("Error", error=f"the report failed: {_text(exc)}")
                try:
                    claim, final = held.report(claim.key, report)
                except Exception as again:
                    held.drop(claim.key)  # its lease brings it back
                    self._outcome(claim, item, "lost", elapsed, f"the report failed: {_text(again)}")
                    return not retryable(again)
            if report.status != "Processing":
                self._outcome(claim, item, "Snoozed" if final == "Pending" else final, elapsed, report.error)
                return True
            item = replace(item, step=report.step)

    def _leave(self, held: Held, rest: list[Claim]) -> None:
        """The connection stays away: the rest of the batch goes back with this slot's next
        claim (or its leases) instead of each waiting out the same retries."""
        still = set(held.held_keys())
        for claim in rest:
            if claim.key in still:
                held.drop(claim.key)
                self._outcome(claim, None, "lost", 0.0, "left unread: the connection failed")

    def _run_handler(self, item: Item) -> Report:
        """What the handler of the item's step comes to."""
        handler = self.handlers.find(item.queue, item.type, item.step)
        try:
            if handler is None:
                raise LookupError(f"no handler is registered for {item.queue} {item.type} "
                                  f"step {item.step or '(first)'}")
            result = handler(item)
        except Permanent as exc:
            return Report("Failed", error=_text(exc))
        except Exception as exc:
            return Report("Error", error=_text(exc))
        if isinstance(result, NextStep):
            if not 0 < len(result.step) <= MAX_STEP:
                return Report("Error", error=f"the handler's next step must be 1 to {MAX_STEP} characters")
            return Report("Processing", step=result.step, response=result.response)
        if isinstance(result, Snooze):
            seconds = result.seconds
            if not (isinstance(seconds, int | float) and 0 < seconds <= MAX_SNOOZE_S):
                return Report("Error", error=f"the handler's snooze must be more than 0 and at most "
                                             f"{MAX_SNOOZE_S} seconds, not {seconds!r}")
            response = result.response or f"snoozed for {seconds:g} s"
            return Report("Pending", response=response, snooze_s=seconds)
        if isinstance(result, Cancel):
            return Report("Cancelled", response=result.reason or "cancelled by its handler")
        if result is not None and not isinstance(result, str):
            return Report("Error", error=f"the handler returned a {type(result).__name__}, not a str")
        return Report("Completed", response=result)

    def _release(self, held: Held, key: datetime, why: str) -> None:
        """Release an item whose handler has not begun; one that has begun is left to it."""
        try:
            held.release_unstarted(key, why)
        except Lost:
            return
        except Exception as exc:  # its lease brings it back instead
            log.error(json.dumps({"queue": self.settings.queue, "key": key.isoformat(),
                                  "event": "release-failed", "error": _text(exc)}))
            return
        self._released(key, why)

    def _release_claim(self, procedures: Procedures, claim: Claim, why: str) -> None:
        try:
            procedures.report(claim, "Pending", error=f"released: {why}")
        except Exception as exc:  # Lost: it finished meanwhile; else its lease brings it back
            if not isinstance(exc, Lost):
                log.error(json.dumps({"queue": self.settings.queue, "key": claim.key.isoformat(),
                                      "event": "release-failed", "error": _text(exc)}))
            return
        self._released(claim.key, why)

    def _released(self, key: datetime, why: str) -> None:
        self.stats.add("released")
        log.info(json.dumps({"queue": self.settings.queue, "key": key.isoformat(),
                             "outcome": "Released", "why": why}))

    def _outcome(self, claim: Claim, item: Item | None, outcome: str, elapsed: float,
                 error: str | None) -> None:
        """Count it and log one line: never the item's fields, which may hold secrets."""
        counter = {"Completed": "completed", "Error": "retried", "Failed": "failed", "Snoozed": "snoozed",
                   "Cancelled": "cancelled"}.get(outcome, "lost")
        self.stats.add(counter)
        if outcome in ("Completed", "Error", "Failed"):
            self.stats.timed(elapsed)
        line = {"queue": self.settings.queue, "key": claim.key.isoformat(), "attempt": claim.attempt,
                "type": item.type if item else None, "step": item.step if item else None,
                "outcome": outcome, "ms": round(elapsed * 1000)}
        if error:
            line["error"] = error
        (log.info if outcome in ("Completed", "Snoozed", "Cancelled") else log.warning)(json.dumps(line))


def _close(procedures: Procedures) -> None:
    """Close a connection the worker no longer uses; one that is broken may refuse."""
    with contextlib.suppress(Exception):
        procedures.close()


def _text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:ERROR_TEXT]

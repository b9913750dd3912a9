"""The worker: N slots, each on its own connection, that claim, run the handler,
keep the leases while they hold items, and report; and a clean shutdown.

A slot claims only with nothing in hand (the database hands a slot's unfinished
items back when a slot of the same name claims again, so a name belongs to one
slot), and keeps the lease of every item of its batch until it reports on it.
When the worker stops, slots stop claiming, release the items of their batch
they have not started (reported Pending: the attempt is given back), and finish
the one in hand within the grace period; what is still running then is
released too, so nothing is left Processing by a clean shutdown.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from relq.worker.handlers import Handlers, Item, NextStep, Permanent
from relq.worker.procedures import Claim, Lost, Procedures
from relq.worker.stats import Stats

log = logging.getLogger("relq.worker")

ERROR_TEXT = 2000  # how much of an exception's message is recorded


@dataclass(frozen=True)
class Settings:
    queue: str
    name: str  # the worker's name; slot n claims as "<name>/<n>"
    concurrency: int = 1
    batch_size: int = 1
    wait_ms: int = 5000  # long-poll; 0: poll with the idle back-off instead
    grace_s: float = 30.0


class IdleBackoff:
    """Sleeps that grow while a queue stays empty and start again on work: for
    queues whose claim does not wait for work itself."""

    def __init__(self, first: float = 0.05, factor: float = 2.0, cap: float = 2.0) -> None:
        self.first, self.factor, self.cap = first, factor, cap
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self.cap, self._next * self.factor)
        return delay

    def reset(self) -> None:
        self._next = self.first


class Held:
    """The claims one slot holds, kept alive from a thread of their own: each lease is
    renewed at a third of its length, whether its item runs now or waits its turn in
    the batch. Every call on the slot's connection goes through here, one at a time
    (a pyodbc connection serves one thread at a time), and always with the item's
    latest token (a renewal moves it)."""

    def __init__(self, procedures: Procedures, claims: list[Claim]) -> None:
        self.procedures = procedures
        self.lost: dict[datetime, str] = {}  # key -> why: taken away while held
        self._claims = {c.key: c for c in claims}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Held:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def latest(self, key: datetime) -> Claim | None:
        with self._lock:
            return self._claims.get(key)

    def read(self, key: datetime) -> Item:
        with self._lock:
            return self.procedures.read(self._claims[key])

    def report(self, key: datetime, status: str, **outcome: str | None) -> tuple[Claim, str]:
        """Report on the item; it stays held only after a step advance. Raises Lost."""
        with self._lock:
            claim = self._claims.pop(key, None)
            if claim is None:
                raise Lost(key, 50005, self.lost.get(key, "the item is no longer held"))
            new, final = self.procedures.report(claim, status, **outcome)
            if status == "Processing":
                self._claims[key] = new
            return new, final

    def _interval(self) -> float:
        with self._lock:
            ends = [c.lease_until for c in self._claims.values()]
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        left = min(((end - now).total_seconds() for end in ends), default=3.0)
        return min(60.0, max(0.5, left / 3))

    def _run(self) -> None:
        while not self._stop.wait(self._interval()):
            with self._lock:
                keys = list(self._claims)
            for key in keys:
                with self._lock:
                    claim = self._claims.get(key)
                    if claim is None or self._stop.is_set():
                        continue
                    try:
                        self._claims[key] = self.procedures.extend(claim)
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
    current: datetime | None = None  # the key whose handler runs now


class Worker:
    def __init__(self, settings: Settings, handlers: Handlers,
                 connect: Callable[[], Procedures], stats: Stats | None = None) -> None:
        self.settings = settings
        self.handlers = handlers
        self.connect = connect
        self.stats = stats or Stats()
        self.stopping = threading.Event()

    def run(self) -> Stats:
        """Run until :meth:`stop`, then shut down cleanly; returns the counts."""
        slots = [Slot(n, self.connect()) for n in range(1, self.settings.concurrency + 1)]
        threads = [threading.Thread(target=self._loop, args=(slot,), daemon=True,
                                    name=f"relq-slot-{slot.number}") for slot in slots]
        for t in threads:
            t.start()
        self.stopping.wait()
        deadline = time.monotonic() + self.settings.grace_s
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        late = [slot for slot, t in zip(slots, threads, strict=True) if t.is_alive() and slot.held]
        if late:
            releaser = self.connect()
            for slot in late:
                held, key = slot.held, slot.current
                if held is None or key is None:
                    continue
                held.stop()  # no renewal may move the token under the release
                claim = held.latest(key)
                if claim is not None:
                    self._release(releaser, claim, "still running when the grace period ended")
        return self.stats

    def stop(self) -> None:
        self.stopping.set()

    # -- one slot ---------------------------------------------------------------------
    def _loop(self, slot: Slot) -> None:
        name = f"{self.settings.name}/{slot.number}"
        idle = IdleBackoff()
        while not self.stopping.is_set():
            try:
                claims = slot.procedures.claim(name, self.settings.batch_size, self.settings.wait_ms)
            except Exception as exc:  # the server is away: wait, then try again
                log.error(json.dumps({"queue": self.settings.queue, "event": "claim-failed",
                                      "slot": name, "error": _text(exc)}))
                self.stopping.wait(idle.next())
                continue
            if not claims:
                if self.settings.wait_ms == 0:
                    self.stopping.wait(idle.next())
                continue
            idle.reset()
            self.stats.add("claimed", len(claims))
            with Held(slot.procedures, claims) as held:
                slot.held = held
                for i, claim in enumerate(claims):
                    if self.stopping.is_set():
                        held.stop()
                        for rest in claims[i:]:
                            latest = held.latest(rest.key)
                            if latest is not None:
                                self._release(slot.procedures, latest, "the worker is shutting down")
                        break
                    slot.current = claim.key
                    try:
                        self._work(held, claim)
                    except Exception as exc:  # a report that failed: the lease brings the item back
                        log.error(json.dumps({"queue": self.settings.queue, "key": claim.key.isoformat(),
                                              "event": "report-failed", "error": _text(exc)}))
                    finally:
                        slot.current = None
            slot.held = None

    def _work(self, held: Held, claim: Claim) -> None:
        try:
            item = held.read(claim.key)
        except (Lost, KeyError) as exc:
            self._outcome(claim, None, "lost", 0.0, str(exc))
            return
        started = time.monotonic()
        while True:
            handler = self.handlers.find(item.queue, item.type, item.step)
            status, step, response, error = "Completed", None, None, None
            try:
                if handler is None:
                    raise LookupError(f"no handler is registered for {item.queue} {item.type} "
                                      f"step {item.step or '(first)'}")
                result = handler(item)
                if isinstance(result, NextStep):
                    status, step, response = "Processing", result.step, result.response
                else:
                    response = result
            except Permanent as exc:
                status, error = "Failed", _text(exc)
            except Exception as exc:
                status, error = "Error", _text(exc)
            elapsed = time.monotonic() - started
            try:
                claim, final = held.report(claim.key, status, step=step, response=response, error=error)
            except Lost as exc:
                self._outcome(claim, item, "lost", elapsed, str(exc))
                return
            if status != "Processing":
                self._outcome(claim, item, final, elapsed, error)
                return
            item = replace(item, step=step)

    def _release(self, procedures: Procedures, claim: Claim, why: str) -> None:
        try:
            procedures.report(claim, "Pending", error=f"released: {why}")
        except Lost:
            return
        except Exception as exc:  # its lease brings it back instead
            log.error(json.dumps({"queue": self.settings.queue, "key": claim.key.isoformat(),
                                  "event": "release-failed", "error": _text(exc)}))
            return
        self.stats.add("released")
        log.info(json.dumps({"queue": self.settings.queue, "key": claim.key.isoformat(),
                             "outcome": "Released", "why": why}))

    def _outcome(self, claim: Claim, item: Item | None, outcome: str, elapsed: float,
                 error: str | None) -> None:
        """Count it and log one line: never the item's fields, which may hold secrets."""
        counter = {"Completed": "completed", "Error": "retried", "Failed": "failed"}.get(outcome, "lost")
        self.stats.add(counter)
        if outcome in ("Completed", "Error", "Failed"):
            self.stats.timed(elapsed)
        line = {"queue": self.settings.queue, "key": claim.key.isoformat(), "attempt": claim.attempt,
                "type": item.type if item else None, "step": item.step if item else None,
                "outcome": outcome, "ms": round(elapsed * 1000)}
        if error:
            line["error"] = error
        (log.info if outcome == "Completed" else log.warning)(json.dumps(line))


def _text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:ERROR_TEXT]

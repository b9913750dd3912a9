"""An in-memory queue that keeps the documented contract of a relational queue's
procedures (docs/queues.md; the headers of Next_/Extend_/Modify_), so
that the worker runtime's own logic can be tested without a server: claims take
due items, most urgent first, and abandoned ones whose lease ran out or that the
claiming slot held; every change moves the token; a stale token is refused
(735710 when the item was claimed again since, else 735705); an Error on the last
attempt becomes Failed; Pending from Processing gives the attempt back.

Faults: ``fail(method, *errors)`` makes the next calls of a procedure raise those
errors before they reach the queue; a connection that raised a broken one (a link
failure) fails every call after it, as a pyodbc connection does."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from relq import db
from relq.worker.handlers import Item
from relq.worker.procedures import Claim, Lost

BASE = datetime(2026, 1, 1)
UNFINISHED = ("Pending", "Processing", "Error", "Paused")


def link_failure() -> db.SqlError:
    """What the driver raises when the connection broke (SQLSTATE 08S01)."""
    return db.SqlError([db.ServerMessage(10054, "TCP Provider: Error code 0x2746", "08S01")])


def deadlock() -> db.SqlError:
    """SQL Server chose the call as a deadlock victim: the connection is fine."""
    return db.SqlError([db.ServerMessage(1205, "Transaction was deadlocked on lock resources with "
                                               "another process and has been chosen as the deadlock victim.",
                                         "40001")])


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass
class Row:
    key: datetime
    type: str
    fields: dict[str, Any]
    status: str = "Pending"
    step: str | None = None
    attempt: int = 0
    token: datetime = BASE
    due: datetime = BASE
    locked_by: str | None = None
    lease_until: datetime | None = None
    claims: list[datetime] = field(default_factory=list)  # the token of every claim
    history: list[str] = field(default_factory=list)  # statuses it went through


class MemoryQueue:
    def __init__(self, queue: str = "Notification", *, max_attempts: int = 3, lease_s: float = 300.0,
                 backoff_s: float = 0.0) -> None:
        self.queue = queue
        self.max_attempts = max_attempts
        self.lease_s = lease_s
        self.backoff_s = backoff_s
        self.rows: dict[datetime, Row] = {}
        self.extends = 0
        self.closed = 0  # connections closed
        self.faults: dict[str, list[db.SqlError]] = {}  # procedure -> errors its next calls raise
        self.changed = threading.Condition()
        self._last = BASE

    def _tick(self) -> datetime:
        """The next key or token, as dbo.QueueNextKey_fn makes them: now, or a
        microsecond past the last when now is not later."""
        self._last = max(_now(), self._last + timedelta(microseconds=1))
        return self._last

    def add(self, type: str = "ResetPassword", **fields: Any) -> datetime:
        with self.changed:
            key = self._tick()
            self.rows[key] = Row(key, type, fields, token=key, due=_now() - timedelta(seconds=1))
            self.changed.notify_all()
            return key

    def procedures(self) -> MemoryProcedures:
        return MemoryProcedures(self)

    def fail(self, method: str, *errors: db.SqlError) -> None:
        """The next calls of ``method`` (claim, read, extend, report) raise ``errors``, one each."""
        with self.changed:
            self.faults.setdefault(method, []).extend(errors)

    def fault(self, method: str) -> db.SqlError | None:
        with self.changed:
            errors = self.faults.get(method)
            return errors.pop(0) if errors else None

    def settled(self) -> bool:
        """Nothing left to do: every item finished."""
        with self.changed:
            return all(r.status not in UNFINISHED for r in self.rows.values())

    def statuses(self) -> dict[datetime, str]:
        with self.changed:
            return {k: r.status for k, r in self.rows.items()}

    def take_over(self, key: datetime, by: str) -> None:
        """Another worker claims the item, as after its lease ran out."""
        with self.changed:
            row = self.rows[key]
            row.token = self._tick()
            row.claims.append(row.token)
            row.attempt += 1
            row.locked_by = by

    # -- the procedures, under the queue's lock ------------------------------------------
    def claim(self, locked_by: str, batch_size: int, wait_ms: int, type: str | None = None) -> list[Claim]:
        deadline = time.monotonic() + wait_ms / 1000
        with self.changed:
            while True:
                claims = self._claim(locked_by, batch_size, type)
                left = deadline - time.monotonic()
                if claims or left <= 0:
                    return claims
                self.changed.wait(min(left, 0.05))

    def _claim(self, locked_by: str, batch_size: int, type: str | None) -> list[Claim]:
        now = _now()
        rows = [r for r in self.rows.values() if type is None or r.type == type]
        for r in rows:  # the sweep: an abandoned item on its last attempt fails
            if (r.status == "Processing" and (r.lease_until < now or r.locked_by == locked_by)
                    and r.attempt >= self.max_attempts):
                r.status, r.lease_until = "Failed", None
                r.token = self._tick()
                r.history.append("Failed")
        abandoned = [r for r in rows if r.status == "Processing"
                     and (r.lease_until < now or r.locked_by == locked_by) and r.attempt < self.max_attempts]
        due = sorted((r for r in rows if r.status in ("Pending", "Error") and r.due <= now
                      and r.attempt < self.max_attempts), key=lambda r: (r.due, r.key))
        claims = []
        for row in (abandoned + due)[:batch_size]:
            row.status, row.attempt, row.locked_by = "Processing", row.attempt + 1, locked_by
            row.lease_until = now + timedelta(seconds=self.lease_s)
            row.token = self._tick()
            row.claims.append(row.token)
            row.history.append("Processing")
            claims.append(Claim(row.key, row.token, row.lease_until, row.attempt))
        return claims

    def _held(self, claim: Claim) -> Row:
        row = self.rows[claim.key]
        if row.token != claim.token:
            number = 735710 if any(t > claim.token for t in row.claims) else 735705
            raise Lost(claim.key, number, f"{self.queue} item {claim.key.isoformat()}: error {number}")
        return row

    def read(self, claim: Claim) -> Item:
        with self.changed:
            row = self.rows[claim.key]
            return Item(self.queue, row.key, row.type, row.step, claim.attempt, dict(row.fields))

    def extend(self, claim: Claim) -> Claim:
        with self.changed:
            row = self._held(claim)
            if row.status != "Processing":
                raise RuntimeError(f"735706: {row.status} has no lease")
            row.token = self._tick()
            row.lease_until = _now() + timedelta(seconds=self.lease_s)
            self.extends += 1
            return claim.renewed(row.token, row.lease_until)

    def report(self, claim: Claim, status: str, *, step: str | None = None, response: str | None = None,
               error: str | None = None, scheduled_for: datetime | None = None) -> tuple[Claim, str]:
        with self.changed:
            row = self._held(claim)
            if row.status != "Processing":
                raise RuntimeError(f"735706: {row.status} -> {status}")
            if status == "Error" and row.attempt >= self.max_attempts:
                status = "Failed"
            if status == "Error":
                row.due = _now() + timedelta(seconds=self.backoff_s)
            if status == "Pending":  # a release: the attempt given back, due again as it was or then
                row.attempt -= 1
                row.due = scheduled_for or row.due
            row.status = status
            row.step = step or row.step
            row.fields["Response"] = response if response is not None else row.fields.get("Response")
            row.fields["Error"] = error if error is not None else row.fields.get("Error")
            row.lease_until = _now() + timedelta(seconds=self.lease_s) if status == "Processing" else None
            row.token = self._tick()
            row.history.append(status)
            self.changed.notify_all()
            return claim.renewed(row.token, row.lease_until or claim.lease_until), status


class MemoryProcedures:
    """One connection's view of a MemoryQueue: what the runtime calls."""

    def __init__(self, memory: MemoryQueue) -> None:
        self.memory = memory
        self.queue = memory.queue
        self.broken: db.SqlError | None = None

    def _enter(self, method: str) -> None:
        if self.broken is not None:
            raise self.broken
        error = self.memory.fault(method)
        if error is not None:
            if error.broken:
                self.broken = error
            raise error

    def claim(self, locked_by: str, batch_size: int, wait_ms: int, type: str | None = None) -> list[Claim]:
        self._enter("claim")
        return self.memory.claim(locked_by, batch_size, wait_ms, type)

    def read(self, claim: Claim) -> Item:
        self._enter("read")
        return self.memory.read(claim)

    def extend(self, claim: Claim) -> Claim:
        self._enter("extend")
        return self.memory.extend(claim)

    def report(self, claim: Claim, status: str, **outcome: Any) -> tuple[Claim, str]:
        self._enter("report")
        return self.memory.report(claim, status, **outcome)

    def close(self) -> None:
        self.memory.closed += 1

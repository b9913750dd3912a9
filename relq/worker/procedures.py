"""The queue procedures a worker calls, for any relational queue: every queue has
the same five (``Next_<Queue>_Batch_trx``, ``Extend_<Queue>_trx``,
``Modify_<Queue>_trx`` and the worker view ``Worker_<Queue>_V``), so one class
serves them all. :class:`Procedures` is the contract; :class:`SqlProcedures`
keeps it through relq.db, and the offline tests keep it in memory."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from relq import db
from relq.errors import Msg
from relq.worker.handlers import Item

# A report the database refused because the item is no longer this attempt's:
# 735704 it is gone (archived), 735705 it changed since (cancelled, failed by a
# sweep), 735708 it is finished, 735710 another worker claimed it after this
# attempt's lease ran out.
LOST = frozenset({Msg.NotFound, Msg.StaleToken, Msg.NotEditable, Msg.TakenOver})
# Errors no retry can cure: a bad argument (a worker name over 128 characters), a
# missing procedure (the database is not deployed), a permission the login lacks.
FATAL = frozenset({Msg.InvalidParameter, 2812, 229, 201})
# Refusals a second call may not meet: SQL Server chose the call as a deadlock victim (1205),
# or it waited out a lock timeout (1222). Every procedure a worker calls runs under XACT_ABORT
# ON, so either error rolled the whole call back.
CONTENDED = frozenset({1205, 1222})


def retryable(exc: BaseException) -> bool:
    """Whether the same call, made again, may succeed: the connection broke (on a new one,
    then: db.SqlError.broken), or the call lost to another session (CONTENDED)."""
    return isinstance(exc, db.SqlError) and (exc.broken or exc.number in CONTENDED)


@dataclass(frozen=True)
class Claim:
    """An item this worker holds: its key, the current token and the lease."""

    key: datetime
    token: datetime
    lease_until: datetime
    attempt: int

    def renewed(self, token: datetime, lease_until: datetime) -> Claim:
        return replace(self, token=token, lease_until=lease_until)


class Lost(Exception):
    """The item is no longer this attempt's (see LOST): drop the work, report nothing."""

    def __init__(self, key: datetime, number: int, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.number = number


class Procedures(Protocol):
    """One queue's procedures, on one connection. Each call is its own transaction."""

    queue: str

    def claim(self, locked_by: str, batch_size: int, wait_ms: int, type: str | None = None
              ) -> list[Claim]: ...

    def read(self, claim: Claim) -> Item: ...

    def extend(self, claim: Claim) -> Claim: ...

    def report(self, claim: Claim, status: str, *, step: str | None = None,
               response: str | None = None, error: str | None = None,
               scheduled_for: datetime | None = None) -> tuple[Claim, str]:
        """The outcome. Returns the claim with the item's new token (and lease, after a
        step advance) and the status the item took: an Error on its last attempt is
        Failed. ``scheduled_for`` (UTC): when a released (Pending) or Error item is due
        again. Raises Lost."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class SqlProcedures:
    """:class:`Procedures` through relq.db on one pyodbc connection."""

    def __init__(self, conn: Any, queue: str) -> None:
        if not queue.isidentifier():
            raise ValueError(f"not a queue name: {queue!r}")
        self.conn = conn
        self.queue = queue

    def claim(self, locked_by: str, batch_size: int, wait_ms: int, type: str | None = None
              ) -> list[Claim]:
        """Claim up to ``batch_size`` items; ``type`` only items of that job type (a queue
        whose claim takes a @Type, such as SyncQueue)."""
        params = {"Type": type} if type is not None else {}
        result = db.call(self.conn, f"dbo.Next_{self.queue}_Batch_trx", LockedBy=locked_by,
                         BatchSize=batch_size, WaitMs=wait_ms, **params)
        return [Claim(key, token, lease, attempt) for key, token, lease, attempt in result.result_sets[0]]

    def read(self, claim: Claim) -> Item:
        view = f"dbo.Worker_{self.queue}_V"
        with db.server_errors(view):
            cursor = self.conn.cursor()
        try:
            sets, columns = db.result_sets(cursor, f"SELECT * FROM {view} WHERE EnqueuedAt = ?;", claim.key,
                                           context=view)
        finally:
            cursor.close()
        if not sets or not sets[0]:
            raise Lost(claim.key, Msg.NotFound, f"{self.queue} item {claim.key.isoformat()} is gone")
        fields = dict(zip(columns[0], sets[0][0], strict=True))
        return Item(self.queue, claim.key, fields["Type"], fields["Step"], claim.attempt, fields)

    def extend(self, claim: Claim) -> Claim:
        rows = self._result(claim, f"dbo.Extend_{self.queue}_trx", EnqueuedAt=claim.key,
                            UpdatedAt=claim.token).result_sets[0]
        _, token, lease_until = rows[0]
        return claim.renewed(token, lease_until)

    def report(self, claim: Claim, status: str, *, step: str | None = None,
               response: str | None = None, error: str | None = None,
               scheduled_for: datetime | None = None) -> tuple[Claim, str]:
        result = self._result(claim, f"dbo.Modify_{self.queue}_trx", EnqueuedAt=claim.key,
                              UpdatedAt=claim.token, Status=status, Step=step, Response=response,
                              Error=error, ScheduledFor=scheduled_for)
        row = dict(zip(result.columns[0], result.result_sets[0][0], strict=True))
        return claim.renewed(row["UpdatedAt"], row["LeaseUntil"] or claim.lease_until), row["Status"]

    def close(self) -> None:
        self.conn.close()

    def _result(self, claim: Claim, procedure: str, **params: Any) -> db.CallResult:
        try:
            return db.call(self.conn, procedure, **params)
        except db.SqlError as exc:
            if exc.number in LOST:
                raise Lost(claim.key, exc.number, str(exc)) from exc
            raise

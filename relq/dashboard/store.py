"""What the dashboard reads and does in the database, and nothing else: the health views
(through relq.status, as `invoke status` reads them), a queue's worker view, the attempt
history view, the control procedures (through relq.db.call), and the login's permissions.

:class:`Store` is the contract; :class:`SqlStore` keeps it on one pyodbc connection, and
the offline tests keep it with a store that answers as the views do. Items are paged by
key (``EnqueuedAt`` after or before the last one shown), never with OFFSET. A list of an
unfinished state is a seek on the queue's health index (``IX_<Queue>_Status``: Status,
then the key), which holds the unfinished items only; any other list reads the queue in
key order from where the last page stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from relq import db, status

# The controls a page offers, each a procedure dbo.<Action>_<Queue>_trx that takes the
# item's key and token (and Retry, Resume, Reschedule a due time).
ACTIONS = ("Retry", "Cancel", "Pause", "Resume", "Reschedule")
# The columns of an item list: every worker view has them.
LISTED = ("EnqueuedAt", "Type", "Status", "AttemptNum", "ScheduledFor", "UpdatedAt", "Error")
ATTEMPT = ("StartedAt", "AttemptNum", "Step", "LockedBy", "Outcome", "Duration", "Response", "Error")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # its type's name as the view declares it (an alias type such as OtpCode, or nvarchar)


@dataclass(frozen=True)
class Filter:
    """Which items of a queue a list shows. ``after``: the key the previous page ended at."""

    status: str | None = None
    type: str | None = None
    error: str | None = None  # text the item's Error contains
    newest_first: bool = True
    after: datetime | None = None


class Store(Protocol):
    def permissions(self, wanted: list[tuple[str, str]]) -> list[bool]:
        """For each (object, permission), whether this login holds it."""
        ...

    def health(self) -> list[status.QueueHealth]: ...

    def columns(self, queue: str) -> list[Column]:
        """The worker view's columns, in its order."""
        ...

    def items(self, queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` items (the LISTED columns), in key order."""
        ...

    def item(self, queue: str, key: datetime, columns: list[str]) -> dict[str, Any] | None: ...

    def attempts(self, queue: str, key: datetime) -> list[dict[str, Any]]:
        """The item's attempts, the latest first."""
        ...

    def act(self, queue: str, action: str, key: datetime, token: datetime,
            scheduled_for: datetime | None = None) -> dict[str, Any]:
        """Call dbo.<action>_<queue>_trx; the item as it returns it (EnqueuedAt, UpdatedAt,
        Status, ScheduledFor). Raises db.SqlError with the procedure's number."""
        ...


def view(queue: str) -> str:
    return f"dbo.Worker_{_name(queue)}_V"


def procedure(action: str, queue: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"not a control: {action!r}")
    return f"dbo.{action}_{_name(queue)}_trx"


def _name(queue: str) -> str:
    """A queue's name as it goes into an object's name: an identifier, never SQL."""
    if not queue.isidentifier() or not queue.isascii():
        raise ValueError(f"not a queue name: {queue!r}")
    return queue


def _escape_like(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern whose ESCAPE character is ``\\``."""
    return "".join("\\" + ch if ch in "\\%_[" else ch for ch in text)


# Parameters arrive as NVARCHAR text (relq.db.sql_value turns a datetime into ISO text); cast
# to the column's type, so that the comparison converts the parameter, not every row's value
# (data type precedence: NVARCHAR outranks VARCHAR), and the seek stays a seek.
KEY = "CAST(? AS DATETIME2(7))"
# The health index's filter, word for word. The optimizer uses a filtered index for a query
# only when the query's predicate makes its results a subset of the filter, and a parameter
# (the state asked for) proves nothing when the plan is compiled; this literal does
# ("Create filtered indexes",
# https://learn.microsoft.com/sql/relational-databases/indexes/create-filtered-indexes).
UNFINISHED_FILTER = "[Status] IN (" + ", ".join(f"'{s}'" for s in status.UNFINISHED) + ")"


def list_sql(queue: str, where: Filter, limit: int) -> tuple[str, list[Any]]:
    """The keyset query of an item list and its parameters."""
    clauses, params = [], []
    if where.status:
        clauses.append("[Status] = CAST(? AS VARCHAR(20))")  # dbo.QueueState
        params.append(where.status)
        if where.status in status.UNFINISHED:
            clauses.append(UNFINISHED_FILTER)
    if where.type:
        clauses.append("[Type] = CAST(? AS VARCHAR(50))")  # dbo._Type
        params.append(where.type)
    if where.error:
        clauses.append("Error LIKE ? ESCAPE '\\'")
        params.append(f"%{_escape_like(where.error)}%")
    if where.after is not None:
        clauses.append(f"EnqueuedAt {'<' if where.newest_first else '>'} {KEY}")
        params.append(where.after)
    condition = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    order = "DESC" if where.newest_first else "ASC"
    columns = ", ".join(f"[{c}]" for c in LISTED)
    sql = f"SELECT TOP ({int(limit)}) {columns} FROM {view(queue)}{condition} ORDER BY EnqueuedAt {order};"
    return sql, params


class SqlStore:
    """:class:`Store` on one connection, opened by ``connect`` when first needed and again
    after the server dropped it. One request at a time uses it (a lock): a dashboard's
    load is a few people and a scraper."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._conn: Any = None
        self._lock = threading.Lock()

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None:
                self._conn = self._connect()
            try:
                yield self._conn
            except db.SqlError as exc:
                if exc.broken:  # gone, or timed out: open a new one next time
                    self._drop()
                raise

    def _drop(self) -> None:
        with suppress(Exception):  # closing a connection the server dropped may fail too
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._drop()

    def _rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with self._connection() as conn:
            cursor = conn.cursor()
            try:
                sets, columns = db.result_sets(cursor, sql, *params)
            finally:
                cursor.close()
        return [dict(zip(columns[0], row, strict=True)) for row in sets[0]] if sets else []

    def permissions(self, wanted: list[tuple[str, str]]) -> list[bool]:
        # HAS_PERMS_BY_NAME: 1 when the login holds the permission (granted to it or a role
        # of it, or implied, as for dbo), 0 when not, NULL when the object cannot be found
        # (https://learn.microsoft.com/sql/t-sql/functions/has-perms-by-name-transact-sql).
        if not wanted:
            return []
        checks = ", ".join(f"HAS_PERMS_BY_NAME(?, N'OBJECT', ?) AS p{n}" for n in range(len(wanted)))
        params = [value for pair in wanted for value in pair]
        with self._connection() as conn:
            cursor = conn.cursor()
            try:
                row = db.query(cursor, f"SELECT {checks};", *params)[0]
            finally:
                cursor.close()
        return [held == 1 for held in row]

    def health(self) -> list[status.QueueHealth]:
        with self._connection() as conn:
            return status.read(conn)

    def columns(self, queue: str) -> list[Column]:
        rows = self._rows("SELECT c.name AS name, TYPE_NAME(c.user_type_id) AS type FROM sys.columns AS c "
                          "WHERE c.object_id = OBJECT_ID(?) ORDER BY c.column_id;", view(queue))
        return [Column(r["name"], r["type"] or "") for r in rows]

    def items(self, queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        sql, params = list_sql(queue, where, limit)
        return self._rows(sql, *params)

    def item(self, queue: str, key: datetime, columns: list[str]) -> dict[str, Any] | None:
        names = ", ".join(f"[{c.replace(']', ']]')}]" for c in columns)
        rows = self._rows(f"SELECT {names} FROM {view(queue)} WHERE EnqueuedAt = {KEY};", key)
        return rows[0] if rows else None

    def attempts(self, queue: str, key: datetime) -> list[dict[str, Any]]:
        columns = ", ".join(f"[{c}]" for c in ATTEMPT)
        return self._rows(f"SELECT {columns} FROM dbo.QueueAttempt_V WHERE [Queue] = CAST(? AS VARCHAR(128)) "
                          f"AND EnqueuedAt = {KEY} "
                          "ORDER BY StartedAt DESC;", _name(queue), key)

    def act(self, queue: str, action: str, key: datetime, token: datetime,
            scheduled_for: datetime | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"EnqueuedAt": key, "UpdatedAt": token}
        if action in ("Retry", "Resume", "Reschedule"):
            params["ScheduledFor"] = scheduled_for
        with self._connection() as conn:
            result = db.call(conn, procedure(action, queue), **params)
        return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))

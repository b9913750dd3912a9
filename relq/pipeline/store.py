"""The pipeline's only contact with SQL Server, behind a small interface.

A :class:`Store` is picklable and cheap: Spark ships it to every task, and each
task (one Spark partition) opens its own :class:`Session`, that is its own
connection, for the work of that partition. :class:`SqlStore` keeps the
contract through relq.db (pyodbc); the offline tests keep it in a SQLite file
that every Spark worker process can open (tests/pipeline/fake_store.py).

Why ODBC inside Spark tasks rather than Spark's JDBC source: relq has one
connection path (relq.db: RELQ_MSSQL, the masking of passwords, the error
numbers), and the same ODBC driver the worker and deploy use; Spark's JDBC
source would need a JDBC driver jar on every executor (Microsoft's mssql-jdbc,
or jTDS, Debian's libjtds-java) and maps DATETIME2 through java.sql.Timestamp
and its own type mapping rather than relq's exact ISO 8601 text. Reading by key
range with a query per Spark partition is what the JDBC source's
partitionColumn/lowerBound/upperBound would do, written out.

Lists of items and keys travel as one JSON parameter that the batch turns into
the procedure's table type with OPENJSON: FreeTDS (Debian's ODBC driver) sends
table-valued parameters only from 1.4 on, jTDS never, and JSON text converts to
DATETIME2 exactly.

The connection string is shipped to the executors inside the store and never
printed: the store's repr masks the password (relq.db.mask).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from relq import db
from relq.errors import RelqError
from relq.pipeline.queues import spec

FINISHED = ("Failed", "Completed", "Cancelled", "Terminated", "PartiallyCompleted")
ENQUEUE_LIMIT = 4000  # items per call: dbo.Add_SyncQueue_utx's @MaxItems
PURGE_LIMIT = 1000  # keys per call: one purge transaction (@BatchSize, at most 1500)
QUERY_TIMEOUT_S = 600
DEADLOCK = 1205
RETRIES = 5


@dataclass(frozen=True)
class Span:
    """The finished items older than the cutoff: their lowest and highest key, and how many."""

    first: datetime
    last: datetime
    count: int


class ItemRejected(Exception):
    """The database refused one item of a call (50007 naming it); nothing of the call was written."""

    def __init__(self, item_no: int, reason: str) -> None:
        super().__init__(f"item {item_no}: {reason}")
        self.item_no = item_no
        self.reason = reason


class Session(Protocol):
    """One connection's worth of work; every call is its own transaction."""

    def job_types(self, queue: str) -> list[str]: ...

    def enqueue(self, queue: str, items: Sequence[dict[str, Any]]) -> list[tuple[int, bool]]:
        """Enqueue ``items`` (each with an ItemNo, at most ENQUEUE_LIMIT) in one call:
        (ItemNo, IsDuplicate) for each. Raises ItemRejected."""
        ...

    def finished_span(self, queue: str, cutoff: datetime) -> Span | None: ...

    def read_range(self, queue: str, first: datetime, end: datetime,
                   cutoff: datetime) -> list[dict[str, Any]]:
        """The finished items with first <= EnqueuedAt < end and UpdatedAt < cutoff, as
        dicts of the queue's read columns (QueueSpec.read_columns)."""
        ...

    def purge(self, queue: str, keys: Sequence[tuple[str, str]]) -> int:
        """Remove the listed items (EnqueuedAt, UpdatedAt as ISO 8601 text, at most
        PURGE_LIMIT) that are still finished and unchanged; how many went."""
        ...


class Store(Protocol):
    def session(self) -> Any:
        """A context manager giving a :class:`Session`."""
        ...


# -- SQL Server, through relq.db -----------------------------------------------------------------------------

_ENQUEUE_SYNCQUEUE = """SET NOCOUNT ON;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload, ScheduledFor, [Priority], GroupKey, DedupKey)
SELECT j.ItemNo, j.[Type], j.EntityKey, j.Payload, j.ScheduledFor, j.[Priority], j.GroupKey, j.DedupKey
FROM OPENJSON(?) WITH (
    ItemNo INT '$.ItemNo',
    [Type] NVARCHAR(MAX) '$.Type',
    EntityKey NVARCHAR(MAX) '$.EntityKey',
    Payload NVARCHAR(MAX) '$.Payload',
    ScheduledFor DATETIME2(7) '$.ScheduledFor',
    [Priority] INT '$.Priority',
    GroupKey NVARCHAR(MAX) '$.GroupKey',
    DedupKey NVARCHAR(MAX) '$.DedupKey'
) AS j;
EXEC dbo.Add_SyncQueue_trx @Items = @Items;
"""
# Wide (MAX) columns on purpose: a value too long for the list type fails the call
# (8152, with the ANSI_WARNINGS every ODBC driver sets) instead of being cut.

_FINISHED_IN = ", ".join(f"'{state}'" for state in FINISHED)
_REJECTED = re.compile(r"\bitem (\d+): (.+)$")


@dataclass(frozen=True, repr=False)
class SqlStore:
    """The pipeline's database: the ODBC connection string (never shown unmasked)."""

    conn_str: str

    def __repr__(self) -> str:
        return f"SqlStore({db.mask(self.conn_str)!r})"

    @contextmanager
    def session(self) -> Iterator[SqlSession]:
        conn = db.connect(self.conn_str)
        conn.timeout = QUERY_TIMEOUT_S
        try:
            yield SqlSession(conn)
        finally:
            conn.close()


class SqlSession:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def job_types(self, queue: str) -> list[str]:
        table = {"SyncQueue": "dbo.SyncQueueType", "Notification": "dbo.NotificationType"}[spec(queue).name]
        return [t for (t,) in db.query(self.conn.cursor(), f"SELECT [Type] FROM {table};")]

    def enqueue(self, queue: str, items: Sequence[dict[str, Any]]) -> list[tuple[int, bool]]:
        if spec(queue).name != "SyncQueue":
            raise ValueError(f"no set-based enqueue for {queue}")
        try:
            rows = db.query(self.conn.cursor(), _ENQUEUE_SYNCQUEUE, json.dumps(list(items)))
        except db.SqlError as exc:
            found = _REJECTED.search(exc.text) if exc.number == 50007 else None
            if found:
                raise ItemRejected(int(found[1]), found[2]) from exc
            raise
        # One row per item (EnqueuedAt, Type, EntityKey, ItemNo, IsDuplicate): anything else
        # means the call failed without an error (a procedure must never do that).
        outcome = [(int(row[3]), bool(row[4])) for row in rows]
        if sorted(no for no, _ in outcome) != sorted(int(i["ItemNo"]) for i in items):
            raise RelqError(f"dbo.Add_SyncQueue_trx returned {len(rows)} rows for {len(items)} items")
        return outcome

    def finished_span(self, queue: str, cutoff: datetime) -> Span | None:
        name = spec(queue).name
        (first, last, count), = db.query(
            self.conn.cursor(),
            f"SELECT MIN(v.EnqueuedAt), MAX(v.EnqueuedAt), COUNT_BIG(*) FROM dbo.Worker_{name}_V AS v "
            f"WHERE v.[Status] IN ({_FINISHED_IN}) AND v.UpdatedAt < CAST(? AS DATETIME2(7));", cutoff)
        return Span(first, last, int(count)) if count else None

    def read_range(self, queue: str, first: datetime, end: datetime,
                   cutoff: datetime) -> list[dict[str, Any]]:
        s = spec(queue)
        columns = s.read_columns()
        select = ", ".join(f"v.[{c}]" for c in columns)
        # READ COMMITTED, no READPAST: a row another session holds (an operator's Retry_)
        # is waited for and read as committed, never skipped. Rows never move within
        # the range: the range is on the clustered key, which no procedure changes.
        # Through the worker view only: QueueAdmin may read it, and no role a queue table.
        rows = db.query(
            self.conn.cursor(),
            f"SET TRANSACTION ISOLATION LEVEL READ COMMITTED; "
            f"SELECT {select} FROM dbo.Worker_{s.name}_V AS v "
            f"WHERE v.EnqueuedAt >= CAST(? AS DATETIME2(7)) AND v.EnqueuedAt < CAST(? AS DATETIME2(7)) "
            f"AND v.[Status] IN ({_FINISHED_IN}) AND v.UpdatedAt < CAST(? AS DATETIME2(7)) "
            f"ORDER BY v.EnqueuedAt;", first, end, cutoff)
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def purge(self, queue: str, keys: Sequence[tuple[str, str]]) -> int:
        name = spec(queue).name
        if not keys:
            return 0
        if len(keys) > PURGE_LIMIT:
            raise ValueError(f"at most {PURGE_LIMIT} keys a call")
        listed = json.dumps([{"EnqueuedAt": e, "UpdatedAt": u} for e, u in keys])
        for attempt in range(RETRIES):
            try:
                # At most PURGE_LIMIT keys and a batch of them all: one transaction, so
                # a deadlock (the purge gives way) rolls back all of it or nothing.
                result = db.call(self.conn, f"dbo.Purge_{name}_trx", Keys=listed,
                                 BatchSize=min(len(keys), PURGE_LIMIT))
                return int(result.result_sets[0][0][0])
            except db.SqlError as exc:
                if exc.number != DEADLOCK or attempt == RETRIES - 1:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")

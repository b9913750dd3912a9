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
DATETIME2 exactly. The parameter is cast to NVARCHAR(MAX) in the batch: ODBC drivers
send a string of more than 4,000 bytes as a long text (SQL_WLONGVARCHAR), which
FreeTDS and Microsoft's driver declare as ntext, a type SQL Server's JSON functions
are not documented to take (https://github.com/mkleehammer/pyodbc/issues/620).

The connection string is shipped to the executors inside the store and never
printed: the store's repr masks the password (relq.db.mask). On a cluster it
travels in Spark's task closures: see the README for the Spark settings that
authenticate and encrypt that traffic.

Object names come from relq.pipeline.queues.spec, which admits only names of
letters and digits; every value is a parameter. Everything is read through
dbo.Worker_<Queue>_V (QueueAdmin may read it; no role reads a queue table).
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from relq import db
from relq.batches import MAX_ITEMS, add_jobs_sql
from relq.errors import Msg, RelqError
from relq.pipeline.queues import JOB, spec

FINISHED = ("Failed", "Completed", "Cancelled", "Terminated", "PartiallyCompleted")
ENQUEUE_LIMIT = MAX_ITEMS  # items per call: the Add_ procedures' @MaxItems
PURGE_LIMIT = 1000  # keys per call: one purge transaction (@BatchSize, at most 1500)
QUERY_TIMEOUT_S = 600
FETCH_ROWS = 1000  # rows a read fetches at a time: a key range is streamed, never held whole
DEADLOCK = 1205
LOCK_TIMEOUT = 1222  # an Add_ procedure's statement waited over 5 s for a lock
ENQUEUE_LOCK = Msg.KeyLock  # an Add_ procedure found no free keys, or no DedupKey's lock, within its 10 s
NO_OBJECT = (208, 2715, 2812)  # invalid object name, unknown type, unknown procedure
RETRIES = 5
BACKOFF_S = 0.2
T = TypeVar("T")


@dataclass(frozen=True)
class Span:
    """The finished items older than the cutoff: their lowest and highest key, and how many."""

    first: datetime
    last: datetime
    count: int


class ItemRejected(Exception):
    """The database refused one item of a call (735707 naming it); nothing of the call was written."""

    def __init__(self, item_no: int, reason: str) -> None:
        super().__init__(f"item {item_no}: {reason}")
        self.item_no = item_no
        self.reason = reason


class Session(Protocol):
    """One connection's worth of work; every call is its own transaction."""

    def queue_name(self, queue: str) -> str:
        """The queue's name as the database spells it (a RelqError when it has no such queue).
        SQL Server resolves object names in the database's collation, usually case-insensitive,
        but sp_getapplock compares resource names byte for byte and the archive's partitions
        are named by the queue: both must use one spelling."""
        ...

    def job_types(self, queue: str) -> list[str]: ...

    def view_columns(self, queue: str) -> list[str]:
        """The columns of the queue's worker view, as the database has them (a job queue's
        subtypes add theirs)."""
        ...

    def enqueue(self, queue: str, items: Sequence[dict[str, Any]]) -> list[tuple[int, bool]]:
        """Enqueue ``items`` (each with an ItemNo, at most ENQUEUE_LIMIT) in one call:
        (ItemNo, IsDuplicate) for each. Raises ItemRejected."""
        ...

    def now(self) -> datetime:
        """The database's clock: SYSUTCDATETIME(), naive UTC."""
        ...

    def try_lock(self, resource: str) -> bool:
        """Take the exclusive application lock ``resource``, owned by this session (held until
        :meth:`unlock` or the session ends), without waiting: whether it was granted. A
        RelqError when the server refused the call itself (sp_getapplock's -999)."""
        ...

    def holds_lock(self, resource: str) -> bool:
        """Whether this session still holds ``resource`` exclusively (a connection dropped and
        reopened by the driver, or killed, no longer does)."""
        ...

    def unlock(self, resource: str) -> None: ...

    def finished_span(self, queue: str, cutoff: datetime) -> Span | None: ...

    def range_starts(self, queue: str, cutoff: datetime, rows: int) -> list[datetime]:
        """The keys of the 1st, (rows + 1)th, (2 rows + 1)th ... finished items with UpdatedAt
        < cutoff, in key order: where key ranges of ``rows`` items each start."""
        ...

    def read_range(self, queue: str, first: datetime, end: datetime,
                   cutoff: datetime) -> Iterator[dict[str, Any]]:
        """The finished items with first <= EnqueuedAt < end and UpdatedAt < cutoff, as
        dicts of the queue's read columns (QueueSpec.read_columns), streamed."""
        ...

    def purge(self, queue: str, keys: Sequence[tuple[str, str]]) -> int:
        """Remove the listed items (EnqueuedAt, UpdatedAt as ISO 8601 text, at most
        PURGE_LIMIT) that are still finished and unchanged; how many went."""
        ...

    def remaining(self, queue: str, keys: Sequence[str]) -> int:
        """How many of the listed items (EnqueuedAt as ISO 8601 text, at most PURGE_LIMIT)
        are in the queue."""
        ...


class Store(Protocol):
    def session(self) -> Any:
        """A context manager giving a :class:`Session`."""
        ...


# -- SQL Server, through relq.db -----------------------------------------------------------------------------

# A job queue's enqueue is relq.batches.add_jobs_sql's; the notifications' is their own. Wide (MAX)
# columns on purpose, as there: a value too long for the list type fails the call (8152).
_ENQUEUE_RESET_PASSWORD = """SET NOCOUNT ON;
DECLARE @Items dbo.Notification_ResetPasswordItemList;
INSERT INTO @Items (
    ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, ScheduledFor, [Priority],
    GroupKey, DedupKey
)
SELECT j.ItemNo, j.UserID, j.Username, j.OTP, j.EmailTo, j.PreferredLanguage, j.PhoneNumber, j.ScheduledFor,
    j.[Priority], j.GroupKey, j.DedupKey
FROM OPENJSON(CAST(? AS NVARCHAR(MAX))) WITH (
    ItemNo INT '$.ItemNo',
    UserID INT '$.UserID',
    Username NVARCHAR(MAX) '$.Username',
    OTP NVARCHAR(MAX) '$.OTP',
    EmailTo NVARCHAR(MAX) '$.EmailTo',
    PreferredLanguage NVARCHAR(MAX) '$.PreferredLanguage',
    PhoneNumber NVARCHAR(MAX) '$.PhoneNumber',
    ScheduledFor DATETIME2(7) '$.ScheduledFor',
    [Priority] INT '$.Priority',
    GroupKey NVARCHAR(MAX) '$.GroupKey',
    DedupKey NVARCHAR(MAX) '$.DedupKey'
) AS j;
EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
"""

# The session owns the lock (no transaction needed, held across every call of the run);
# @LockTimeout 0: a second run fails at once instead of queueing behind the first.
# sp_getapplock needs no permission beyond public (@DbPrincipal defaults to public).
_LOCK = """SET NOCOUNT ON;
DECLARE @Result INT;
EXEC @Result = sys.sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Session',
    @LockTimeout = 0;
SELECT @Result;
"""
_UNLOCK = """SET NOCOUNT ON;
IF APPLOCK_MODE(N'public', ?, 'Session') <> 'NoLock'
    EXEC sys.sp_releaseapplock @Resource = ?, @LockOwner = 'Session';
"""

_HOLDS_LOCK = "SELECT APPLOCK_MODE(N'public', ?, 'Session');"
# Metadata visibility: OBJECT_ID sees an object its caller has a permission on. QueueAdmin
# (archive) may SELECT the worker view, QueueProducer (enqueue) EXECUTE the Add_ procedure.
_QUEUE_NAME = ("SELECT OBJECT_NAME(COALESCE(OBJECT_ID(N'dbo.Worker_' + ? + N'_V', N'V'), "
               "OBJECT_ID(N'dbo.Add_' + ? + N'_trx', N'P')));")
_CANONICAL = re.compile(r"^(?:Worker_(\w+)_V|Add_(\w+)_trx)$")
LOCK_NOT_GRANTED = -1  # sp_getapplock with @LockTimeout 0: another session holds it

_FINISHED_IN = ", ".join(f"'{state}'" for state in FINISHED)
_REJECTED = re.compile(r"\bitem (\d+): (.+)$")


def _sql_errors() -> Any:
    """pyodbc errors raised inside become relq.db.SqlError, as relq.db's own calls do
    (for the streamed read, which cannot go through relq.db.query's fetchall)."""

    @contextmanager
    def converting() -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            if db._is_pyodbc_error(exc):
                raise db.SqlError(db.server_messages(exc)) from exc
            raise

    return converting()


def _retrying(what: Callable[[], T], numbers: tuple[int, ...]) -> T:
    """``what()``, again after a pause when it fails with one of ``numbers``: errors after
    which the call wrote nothing (its transaction was rolled back), so it can run again."""
    for attempt in range(RETRIES):
        try:
            return what()
        except db.SqlError as exc:
            if exc.number not in numbers or attempt == RETRIES - 1:
                raise
            time.sleep(BACKOFF_S * 2 ** attempt * (0.5 + random.random()))
    raise AssertionError("unreachable")


def _no_such_queue(name: str, exc: db.SqlError) -> RelqError:
    return RelqError(f"queue {name}: this database has no such queue, or not all of its objects "
                     f"(SQL Server error {exc.number}: {exc.text})")


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

    def _query(self, name: str, sql: str, *params: Any) -> list[tuple]:
        try:
            return db.query(self.conn.cursor(), sql, *params)
        except db.SqlError as exc:
            if exc.number in NO_OBJECT:
                raise _no_such_queue(name, exc) from exc
            raise

    def queue_name(self, queue: str) -> str:
        s = spec(queue)
        if s.kind != JOB:
            return s.name  # a custom queue's spelling is relq's own
        ((found,),) = db.query(self.conn.cursor(), _QUEUE_NAME, s.name, s.name)
        match = _CANONICAL.match(found or "")
        if not match:
            raise RelqError(f"queue {s.name}: this database has no such queue (no dbo.Worker_{s.name}_V or "
                            f"dbo.Add_{s.name}_trx that this login may use)")
        return match[1] or match[2]

    def job_types(self, queue: str) -> list[str]:
        s = spec(queue)
        if s.kind != JOB:
            raise RelqError(f"queue {s.name} has no job types")
        return [t for (t,) in self._query(s.name, f"SELECT [Type] FROM dbo.{s.name}Type;")]

    def view_columns(self, queue: str) -> list[str]:
        name = spec(queue).name
        sql = ("SELECT c.name FROM sys.columns AS c "
               "WHERE c.object_id = OBJECT_ID(N'dbo.Worker_' + ? + N'_V') ORDER BY c.column_id;")
        return [c for (c,) in self._query(name, sql, name)]

    def enqueue(self, queue: str, items: Sequence[dict[str, Any]]) -> list[tuple[int, bool]]:
        s = spec(queue)
        if s.kind == JOB:
            sql, procedure = add_jobs_sql(s.name), f"dbo.Add_{s.name}_trx"
        else:
            sql, procedure = _ENQUEUE_RESET_PASSWORD, "dbo.Add_Notification_ResetPassword_Batch_trx"
        listed = json.dumps(list(items))
        try:
            # A call writes all of its items or none, so one that lost a deadlock, waited out
            # a lock, or found no free keys in its 10 s can simply go again.
            rows = _retrying(lambda: self._query(s.name, sql, listed), (ENQUEUE_LOCK, DEADLOCK, LOCK_TIMEOUT))
        except db.SqlError as exc:
            found = _REJECTED.search(exc.text) if exc.number == Msg.InvalidParameter else None
            if found:
                raise ItemRejected(int(found[1]), found[2]) from exc
            raise
        # One row per item, ItemNo and IsDuplicate its last two columns: anything else
        # means the call failed without an error (a procedure must never do that).
        outcome = [(int(row[-2]), bool(row[-1])) for row in rows]
        if sorted(no for no, _ in outcome) != sorted(int(i["ItemNo"]) for i in items):
            raise RelqError(f"{procedure} returned {len(rows)} rows for {len(items)} items")
        return outcome

    def now(self) -> datetime:
        ((now,),) = db.query(self.conn.cursor(), "SELECT SYSUTCDATETIME();")
        return now

    def try_lock(self, resource: str) -> bool:
        ((result,),) = db.query(self.conn.cursor(), _LOCK, resource)
        if int(result) >= 0:
            return True
        if int(result) == LOCK_NOT_GRANTED:
            return False
        # -999: a parameter or call error; -2, -3 (cancelled, deadlock) cannot come without a wait.
        raise RelqError(f"sp_getapplock refused the application lock {resource} (it returned {result}: "
                        f"a parameter or call error, not another run)")

    def holds_lock(self, resource: str) -> bool:
        ((mode,),) = db.query(self.conn.cursor(), _HOLDS_LOCK, resource)
        return mode == "Exclusive"

    def unlock(self, resource: str) -> None:
        db.query(self.conn.cursor(), _UNLOCK, resource, resource)

    def finished_span(self, queue: str, cutoff: datetime) -> Span | None:
        name = spec(queue).name
        (first, last, count), = self._query(
            name,
            f"SELECT MIN(v.EnqueuedAt), MAX(v.EnqueuedAt), COUNT_BIG(*) FROM dbo.Worker_{name}_V AS v "
            f"WHERE v.[Status] IN ({_FINISHED_IN}) AND v.UpdatedAt < CAST(? AS DATETIME2(7));", cutoff)
        return Span(first, last, int(count)) if count else None

    def range_starts(self, queue: str, cutoff: datetime, rows: int) -> list[datetime]:
        name = spec(queue).name
        # Numbered in key order on the server; only every rows-th key comes back.
        found = self._query(
            name,
            f"SELECT k.EnqueuedAt FROM (SELECT v.EnqueuedAt, "
            f"ROW_NUMBER() OVER (ORDER BY v.EnqueuedAt) AS Rn "
            f"FROM dbo.Worker_{name}_V AS v WHERE v.[Status] IN ({_FINISHED_IN}) "
            f"AND v.UpdatedAt < CAST(? AS DATETIME2(7))) AS k "
            f"WHERE (k.Rn - 1) % CAST(? AS BIGINT) = 0 ORDER BY k.EnqueuedAt;", cutoff, rows)
        return [start for (start,) in found]

    def read_range(self, queue: str, first: datetime, end: datetime,
                   cutoff: datetime) -> Iterator[dict[str, Any]]:
        s = spec(queue)
        columns = s.read_columns()
        select = ", ".join(f"v.[{c}]" for c in columns)
        # READ COMMITTED, no READPAST: a row another session holds (an operator's Retry_)
        # is waited for and read as committed, never skipped. Rows never move within
        # the range: the range is on the clustered key, which no procedure changes.
        sql = (f"SET NOCOUNT ON; SET TRANSACTION ISOLATION LEVEL READ COMMITTED; "
               f"SELECT {select} FROM dbo.Worker_{s.name}_V AS v "
               f"WHERE v.EnqueuedAt >= CAST(? AS DATETIME2(7)) AND v.EnqueuedAt < CAST(? AS DATETIME2(7)) "
               f"AND v.[Status] IN ({_FINISHED_IN}) AND v.UpdatedAt < CAST(? AS DATETIME2(7)) "
               f"ORDER BY v.EnqueuedAt;")
        cursor = self.conn.cursor()
        try:
            with _sql_errors():
                cursor.execute(sql, *[db.sql_value(p) for p in (first, end, cutoff)])
            while True:
                with _sql_errors():
                    rows = cursor.fetchmany(FETCH_ROWS)
                if not rows:
                    return
                for row in rows:
                    yield dict(zip(columns, row, strict=True))
        finally:
            cursor.close()

    def purge(self, queue: str, keys: Sequence[tuple[str, str]]) -> int:
        name = spec(queue).name
        if not keys:
            return 0
        if len(keys) > PURGE_LIMIT:
            raise ValueError(f"at most {PURGE_LIMIT} keys a call")
        listed = json.dumps([{"EnqueuedAt": e, "UpdatedAt": u} for e, u in keys])
        # At most PURGE_LIMIT keys and a batch of them all: one transaction, so a
        # deadlock (the purge gives way) rolls back all of it or nothing.
        result = _retrying(lambda: db.call(self.conn, f"dbo.Purge_{name}_trx", Keys=listed,
                                           BatchSize=min(len(keys), PURGE_LIMIT)), (DEADLOCK,))
        return int(result.result_sets[0][0][0])

    def remaining(self, queue: str, keys: Sequence[str]) -> int:
        name = spec(queue).name
        if not keys:
            return 0
        if len(keys) > PURGE_LIMIT:
            raise ValueError(f"at most {PURGE_LIMIT} keys a call")
        ((count,),) = self._query(
            name,
            f"SELECT COUNT_BIG(*) FROM OPENJSON(CAST(? AS NVARCHAR(MAX))) AS k "
            f"INNER JOIN dbo.Worker_{name}_V AS v ON v.EnqueuedAt = CONVERT(DATETIME2(7), k.[value], 126);",
            json.dumps(list(keys)))
        return int(count)

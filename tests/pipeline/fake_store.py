"""A stand-in for the pipeline's database that keeps the contract of what it calls
(relq.pipeline.store.Session):

- Add_<Queue>_trx (any job queue) and Add_Notification_ResetPassword_Batch_trx:
  keys, the DedupKey rule (a key an unfinished item carries returns that item;
  items of one call sharing a key are one item), the refusal of a whole call
  for one bad item, naming it, and one (ItemNo, IsDuplicate) per item;
- Purge_<Queue>_trx's exact mode (only listed items still finished with the
  listed UpdatedAt go), with keys only in the ISO 8601 form the pipeline sends;
- the reads through the worker view, the key-range starts by row number, the
  session-owned application lock (re-entrant; resource names compared byte for
  byte, as sp_getapplock does; kept when a session closes, as a pooled
  connection keeps it), and the database's clock (``skew`` ahead of the test's);
- queue names resolved case-insensitively (the usual database collation), the
  database's spelling given by queue_name; a queue the database does not have
  is refused in one line, as SqlStore does;
- DedupKeys compared case- and trailing-space-insensitively, as the
  database's collation compares them.

It lives in a SQLite file, not in memory: Spark runs the partitions' code in
worker processes of their own, and each opens the file, as each opens its own
connection to SQL Server."""

from __future__ import annotations

import os
import re
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from relq.errors import RelqError
from relq.pipeline.queues import JOB, spec
from relq.pipeline.store import ENQUEUE_LIMIT, FINISHED, PURGE_LIMIT, ItemRejected, Span

UNFINISHED = ("Pending", "Processing", "Error", "Paused")
COLUMNS = ("EnqueuedAt", "Type", "EntityKey", "Payload", "Status", "Step", "AttemptNum", "ScheduledFor",
           "StartedAt", "UpdatedAt", "Duration", "Priority", "GroupKey", "DedupKey", "LockedBy", "LeaseUntil",
           "Response", "Error", "UserID", "Username", "OTP", "EmailTo", "PreferredLanguage", "EmailResponse",
           "EmailError", "PhoneNumber", "SmsResponse", "SmsError")
TIMES = ("EnqueuedAt", "ScheduledFor", "StartedAt", "UpdatedAt", "LeaseUntil")
KEY = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")  # what the pipeline sends as a key


def iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class FakeStore:
    path: str
    types: tuple[str, ...] = ("CustomerSync", "InventorySync")
    queues: tuple[str, ...] = ("SyncQueue", "Notification")
    fail_purge: bool = False  # every purge call fails, as a lost connection would
    retry_before_purge: str | None = None  # this EntityKey's item is retried just before the first purge
    purged_before_purge: str | None = None  # this EntityKey's item is gone just before the first purge
    skew: timedelta = timedelta(0)  # the database's clock, ahead of the test's
    blocked_email: str | None = None  # the database refuses addresses ending so (a rule Spark does not know)
    fail_unlock: bool = False  # releasing the application lock fails, as on a dropped connection
    subtype_columns: tuple[str, ...] = ()  # the worker views' columns of a job queue's subtypes

    def create(self) -> FakeStore:
        with self.connect() as conn:
            for queue in self.queues:
                conn.execute(f"CREATE TABLE IF NOT EXISTS {queue} ({', '.join(COLUMNS)}, "
                             f"PRIMARY KEY (EnqueuedAt))")
            conn.execute("CREATE TABLE IF NOT EXISTS Calls (Kind, Size, First, Last, Pid)")
            conn.execute("CREATE TABLE IF NOT EXISTS Locks (Resource PRIMARY KEY, Owner, Count)")
        return self

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def session(self) -> Iterator[FakeSession]:
        # The session's locks stay when it closes: with connection pooling (pyodbc's default)
        # the server session, and its locks, outlive the connection object.
        with self.connect() as conn:
            yield FakeSession(conn, self)

    def clock(self) -> datetime:
        return now() + self.skew

    # -- for the tests ---------------------------------------------------------------------------------------
    def rows(self, queue: str = "SyncQueue") -> list[dict[str, Any]]:
        with self.connect() as conn:
            cursor = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM {queue} ORDER BY EnqueuedAt")
            return [_row(COLUMNS, r) for r in cursor.fetchall()]

    def finish(self, status: str = "Completed", *, ago: timedelta = timedelta(hours=2),
               where: str = "1 = 1", queue: str = "SyncQueue") -> None:
        """Every item matching ``where`` worked once and ``status`` since ``ago`` (on the
        database's clock)."""
        at = self.clock() - ago
        with self.connect() as conn:
            conn.execute(f"UPDATE {queue} SET Status = ?, AttemptNum = 1, Step = 'Push', "
                         f"Response = 'done', StartedAt = ?, Duration = 42, LockedBy = 'w/1', "
                         f"UpdatedAt = ? WHERE {where}",
                         (status, iso(at - timedelta(seconds=1)), iso(at)))

    def calls(self, kind: str) -> list[tuple]:
        with self.connect() as conn:
            return conn.execute("SELECT Size, First, Last FROM Calls WHERE Kind = ? ORDER BY First",
                                (kind,)).fetchall()

    def pids(self, kind: str) -> set[int]:
        """The processes that made the calls of ``kind``."""
        with self.connect() as conn:
            return {pid for (pid,) in conn.execute("SELECT Pid FROM Calls WHERE Kind = ?", (kind,))}

    def drop_locks(self) -> None:
        """Every application lock vanishes, as when the server ends the sessions (idle timeout, kill)."""
        with self.connect() as conn:
            conn.execute("DELETE FROM Locks")


def _same(dedup: str | None) -> str | None:
    """A DedupKey as the database's collation compares it: case and trailing spaces ignored."""
    return None if dedup is None else dedup.rstrip(" ").upper()


def _row(columns: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    row = dict(zip(columns, values, strict=True))
    for name in TIMES:
        if row.get(name) is not None:
            row[name] = datetime.fromisoformat(row[name])
    return row


class FakeSession:
    def __init__(self, conn: sqlite3.Connection, store: FakeStore) -> None:
        self.conn = conn
        self.store = store
        self.id = uuid.uuid4().hex

    def _table(self, queue: str) -> str:
        """The queue's table, found case-insensitively as SQL Server finds dbo.Worker_<Queue>_V."""
        name = spec(queue).name
        for known in self.store.queues:
            if known.casefold() == name.casefold():
                return known
        raise RelqError(f"queue {name}: this database has no such queue, or not all of its objects "
                        f"(SQL Server error 208: Invalid object name 'dbo.Worker_{name}_V'.)")

    def _call(self, kind: str, size: int | None, first: str | None = None, last: str | None = None) -> None:
        self.conn.execute("INSERT INTO Calls VALUES (?, ?, ?, ?, ?)", (kind, size, first, last, os.getpid()))

    def queue_name(self, queue: str) -> str:
        return self._table(queue)

    def job_types(self, queue: str) -> list[str]:
        self._table(queue)
        return list(self.store.types)

    def view_columns(self, queue: str) -> list[str]:
        """What dbo.Worker_<Queue>_V has: what the archive reads (checked against the real
        views' files by tests/pipeline/test_queues.py), and any subtype's columns."""
        self._table(queue)
        return [*spec(queue).read_columns(), *self.store.subtype_columns]

    def _refusal(self, queue: str, item: dict[str, Any]) -> str | None:
        if spec(queue).kind == JOB:
            return None if item["Type"] in self.store.types else f"Type is not one of dbo.{queue}Type"
        if item["UserID"] is None or item["UserID"] <= 0:
            return "UserID is required and must be positive"
        if item["EmailTo"] is None and item["PhoneNumber"] is None:
            return "give EmailTo, PhoneNumber or both: a notification needs a channel"
        blocked = self.store.blocked_email
        if blocked and item["EmailTo"] is not None and item["EmailTo"].endswith(blocked):
            return "EmailTo is not an e-mail address"
        return None

    def enqueue(self, queue: str, items: Sequence[dict[str, Any]]) -> list[tuple[int, bool]]:
        table = self._table(queue)
        assert 1 <= len(items) <= ENQUEUE_LIMIT
        job = spec(queue).kind == JOB
        for item in sorted(items, key=lambda i: i["ItemNo"]):
            why = self._refusal(queue, item)
            if why:
                raise ItemRejected(item["ItemNo"], why)
        self.conn.execute("BEGIN IMMEDIATE")  # the enqueue lock
        try:
            self._call("enqueue", len(items))
            last = self.conn.execute(f"SELECT MAX(EnqueuedAt) FROM {table}").fetchone()[0]
            clock = self.store.clock()
            key = max(clock, datetime.fromisoformat(last) + timedelta(microseconds=1)) if last else clock
            outcome, kept = [], {}
            for item in sorted(items, key=lambda i: i["ItemNo"]):
                dedup = item["DedupKey"]
                same = _same(dedup)
                holder = dedup is not None and (same in kept or self.conn.execute(
                    f"SELECT 1 FROM {table} WHERE upper(rtrim(DedupKey, ' ')) = upper(rtrim(?, ' ')) "
                    f"AND Status IN {UNFINISHED}", (dedup,)).fetchone())
                if holder:
                    outcome.append((item["ItemNo"], True))
                    continue
                when = item["ScheduledFor"] or iso(key)
                values = {"EnqueuedAt": iso(key), "Status": "Pending", "AttemptNum": 0,
                          "ScheduledFor": iso(datetime.fromisoformat(when)), "UpdatedAt": iso(key),
                          "Priority": item["Priority"] or 0, "GroupKey": item["GroupKey"], "DedupKey": dedup,
                          "Response": "", "Error": ""}
                if job:
                    values |= {f: item[f] for f in ("Type", "EntityKey", "Payload")}
                else:
                    values |= {"Type": "ResetPassword",
                               **{f: item[f] for f in ("UserID", "Username", "OTP", "EmailTo",
                                                       "PhoneNumber")}}
                    if item["EmailTo"] is not None:
                        values |= {"PreferredLanguage": item["PreferredLanguage"] or "en",
                                   "EmailResponse": "", "EmailError": ""}
                    if item["PhoneNumber"] is not None:
                        values |= {"SmsResponse": "", "SmsError": ""}
                marks = ", ".join("?" * len(values))
                self.conn.execute(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({marks})",
                                  tuple(values.values()))
                kept[same] = True
                outcome.append((item["ItemNo"], False))
                key += timedelta(microseconds=1)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return outcome

    def now(self) -> datetime:
        return self.store.clock()

    def try_lock(self, resource: str) -> bool:
        # Re-entrant for its owner, as a session's applock is (each grant needs a release).
        self.conn.execute("UPDATE Locks SET Count = Count + 1 WHERE Resource = ? AND Owner = ?",
                          (resource, self.id))
        taken = self.conn.execute("INSERT OR IGNORE INTO Locks VALUES (?, ?, 1)", (resource, self.id))
        return taken.rowcount == 1 or self.holds_lock(resource)

    def holds_lock(self, resource: str) -> bool:
        return self.conn.execute("SELECT 1 FROM Locks WHERE Resource = ? AND Owner = ?",
                                 (resource, self.id)).fetchone() is not None

    def unlock(self, resource: str) -> None:
        self._call("unlock", None, resource)
        if self.store.fail_unlock:
            raise ConnectionError("the connection was lost while unlocking")
        self.conn.execute("UPDATE Locks SET Count = Count - 1 WHERE Resource = ? AND Owner = ?",
                          (resource, self.id))
        self.conn.execute("DELETE FROM Locks WHERE Resource = ? AND Owner = ? AND Count <= 0",
                          (resource, self.id))

    def finished_span(self, queue: str, cutoff: datetime) -> Span | None:
        first, last, count = self.conn.execute(
            f"SELECT MIN(EnqueuedAt), MAX(EnqueuedAt), COUNT(*) FROM {self._table(queue)} "
            f"WHERE Status IN {FINISHED} AND UpdatedAt < ?", (iso(cutoff),)).fetchone()
        return Span(datetime.fromisoformat(first), datetime.fromisoformat(last), count) if count else None

    def range_starts(self, queue: str, cutoff: datetime, rows: int) -> list[datetime]:
        found = self.conn.execute(
            f"SELECT EnqueuedAt FROM (SELECT EnqueuedAt, ROW_NUMBER() OVER (ORDER BY EnqueuedAt) AS Rn "
            f"FROM {self._table(queue)} WHERE Status IN {FINISHED} AND UpdatedAt < ?) "
            f"WHERE (Rn - 1) % ? = 0 ORDER BY EnqueuedAt", (iso(cutoff), rows)).fetchall()
        return [datetime.fromisoformat(start) for (start,) in found]

    def read_range(self, queue: str, first: datetime, end: datetime,
                   cutoff: datetime) -> Iterator[dict[str, Any]]:
        columns = spec(queue).read_columns()
        cursor = self.conn.execute(
            f"SELECT {', '.join(columns)} FROM {self._table(queue)} WHERE EnqueuedAt >= ? AND EnqueuedAt < ? "
            f"AND Status IN {FINISHED} AND UpdatedAt < ? ORDER BY EnqueuedAt",
            (iso(first), iso(end), iso(cutoff)))
        count = 0
        while rows := cursor.fetchmany(7):
            for row in rows:
                count += 1
                yield _row(columns, row)
        self._call("read", count, iso(first), iso(end))

    def purge(self, queue: str, keys: Sequence[tuple[str, str]]) -> int:
        table = self._table(queue)
        assert 1 <= len(keys) <= PURGE_LIMIT
        bad = [k for pair in keys for k in pair if not isinstance(k, str) or not KEY.match(k)]
        assert not bad, f"keys must be ISO 8601 with microseconds, not {bad[:3]}"
        if self.store.fail_purge:
            raise ConnectionError("the connection was lost")
        self.conn.execute("BEGIN IMMEDIATE")
        if self.store.retry_before_purge is not None:
            self.conn.execute(f"UPDATE {table} SET Status = 'Pending', UpdatedAt = ? WHERE EntityKey = ?",
                              (iso(self.store.clock()), self.store.retry_before_purge))
        if self.store.purged_before_purge is not None:
            self.conn.execute(f"DELETE FROM {table} WHERE EntityKey = ?", (self.store.purged_before_purge,))
        removed = 0
        for enqueued_at, updated_at in keys:
            removed += self.conn.execute(
                f"DELETE FROM {table} WHERE EnqueuedAt = ? AND UpdatedAt = ? AND Status IN {FINISHED}",
                (enqueued_at, updated_at)).rowcount
        self._call("purge", len(keys))
        self.conn.execute("COMMIT")
        return removed

    def remaining(self, queue: str, keys: Sequence[str]) -> int:
        table = self._table(queue)
        assert 1 <= len(keys) <= PURGE_LIMIT and all(KEY.match(k) for k in keys)
        found = (self.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE EnqueuedAt = ?", (k,)).fetchone()[0]
                 for k in keys)
        return sum(found)

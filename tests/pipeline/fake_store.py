"""A stand-in for the pipeline's database that keeps the contract of the procedures
it calls (relq.pipeline.store.Session): Add_SyncQueue_trx's keys and DedupKey
rule (a key an unfinished item carries returns that item; items of one call
sharing a key are one item) and its refusal of a whole call for one bad item,
naming it; Purge_<Queue>_trx's exact mode (only listed items still finished
with the listed UpdatedAt go).

It lives in a SQLite file, not in memory: Spark runs the partitions' code in
worker processes of their own, and each opens the file, as each opens its own
connection to SQL Server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from relq.pipeline.store import ENQUEUE_LIMIT, FINISHED, PURGE_LIMIT, ItemRejected, Span

UNFINISHED = ("Pending", "Processing", "Error", "Paused")
COLUMNS = ("EnqueuedAt", "Type", "EntityKey", "Payload", "Status", "Step", "AttemptNum", "ScheduledFor",
           "StartedAt", "UpdatedAt", "Duration", "Priority", "GroupKey", "DedupKey", "LockedBy", "LeaseUntil",
           "Response", "Error")
TIMES = ("EnqueuedAt", "ScheduledFor", "StartedAt", "UpdatedAt", "LeaseUntil")


def iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class FakeStore:
    path: str
    types: tuple[str, ...] = ("CustomerSync", "InventorySync")
    fail_purge: bool = False  # every purge call fails, as a lost connection would
    retry_before_purge: str | None = None  # this EntityKey's item is retried just before the first purge

    def create(self) -> FakeStore:
        with self.connect() as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS SyncQueue ({', '.join(COLUMNS)}, "
                         f"PRIMARY KEY (EnqueuedAt))")
            conn.execute("CREATE TABLE IF NOT EXISTS Calls (Kind, Size, First, Last)")
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
        with self.connect() as conn:
            yield FakeSession(conn, self)

    # -- for the tests ---------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        with self.connect() as conn:
            cursor = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM SyncQueue ORDER BY EnqueuedAt")
            return [_row(r) for r in cursor.fetchall()]

    def finish(self, status: str = "Completed", *, ago: timedelta = timedelta(hours=2),
               where: str = "1 = 1") -> None:
        """Every item matching ``where`` worked once and ``status`` since ``ago``."""
        with self.connect() as conn:
            conn.execute(f"UPDATE SyncQueue SET Status = ?, AttemptNum = 1, Step = 'Push', "
                         f"Response = 'done', StartedAt = ?, Duration = 42, LockedBy = 'w/1', "
                         f"UpdatedAt = ? WHERE {where}",
                         (status, iso(now() - ago - timedelta(seconds=1)), iso(now() - ago)))

    def calls(self, kind: str) -> list[tuple]:
        with self.connect() as conn:
            return conn.execute("SELECT Size, First, Last FROM Calls WHERE Kind = ? ORDER BY First",
                                (kind,)).fetchall()


def _row(values: Sequence[Any]) -> dict[str, Any]:
    row = dict(zip(COLUMNS, values, strict=True))
    for name in TIMES:
        if row[name] is not None:
            row[name] = datetime.fromisoformat(row[name])
    return row


class FakeSession:
    def __init__(self, conn: sqlite3.Connection, store: FakeStore) -> None:
        self.conn = conn
        self.store = store

    def job_types(self, queue: str) -> list[str]:
        return list(self.store.types)

    def enqueue(self, queue: str, items: Sequence[dict[str, Any]]) -> list[tuple[int, bool]]:
        assert queue == "SyncQueue" and 1 <= len(items) <= ENQUEUE_LIMIT
        for item in sorted(items, key=lambda i: i["ItemNo"]):
            if item["Type"] not in self.store.types:
                raise ItemRejected(item["ItemNo"], "Type is not one of dbo.SyncQueueType")
        self.conn.execute("BEGIN IMMEDIATE")  # the enqueue lock
        try:
            self.conn.execute("INSERT INTO Calls VALUES ('enqueue', ?, NULL, NULL)", (len(items),))
            last = self.conn.execute("SELECT MAX(EnqueuedAt) FROM SyncQueue").fetchone()[0]
            key = max(now(), datetime.fromisoformat(last) + timedelta(microseconds=1)) if last else now()
            outcome, kept = [], {}
            for item in sorted(items, key=lambda i: i["ItemNo"]):
                dedup = item["DedupKey"]
                holder = dedup is not None and (dedup in kept or self.conn.execute(
                    f"SELECT 1 FROM SyncQueue WHERE DedupKey = ? AND Status IN {UNFINISHED}",
                    (dedup,)).fetchone())
                if holder:
                    outcome.append((item["ItemNo"], True))
                    continue
                when = item["ScheduledFor"] or iso(key)
                self.conn.execute(
                    f"INSERT INTO SyncQueue ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                    (iso(key), item["Type"], item["EntityKey"], item["Payload"], "Pending", None, 0,
                     iso(datetime.fromisoformat(when)), None, iso(key), None, item["Priority"] or 0,
                     item["GroupKey"], dedup, None, None, "", ""))
                kept[dedup] = True
                outcome.append((item["ItemNo"], False))
                key += timedelta(microseconds=1)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return outcome

    def finished_span(self, queue: str, cutoff: datetime) -> Span | None:
        first, last, count = self.conn.execute(
            f"SELECT MIN(EnqueuedAt), MAX(EnqueuedAt), COUNT(*) FROM SyncQueue "
            f"WHERE Status IN {FINISHED} AND UpdatedAt < ?", (iso(cutoff),)).fetchone()
        return Span(datetime.fromisoformat(first), datetime.fromisoformat(last), count) if count else None

    def read_range(self, queue: str, first: datetime, end: datetime,
                   cutoff: datetime) -> list[dict[str, Any]]:
        self.conn.execute("INSERT INTO Calls VALUES ('read', NULL, ?, ?)", (iso(first), iso(end)))
        cursor = self.conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM SyncQueue WHERE EnqueuedAt >= ? AND EnqueuedAt < ? "
            f"AND Status IN {FINISHED} AND UpdatedAt < ?", (iso(first), iso(end), iso(cutoff)))
        return [_row(r) for r in cursor.fetchall()]

    def purge(self, queue: str, keys: Sequence[tuple[str, str]]) -> int:
        assert 1 <= len(keys) <= PURGE_LIMIT
        if self.store.fail_purge:
            raise ConnectionError("the connection was lost")
        self.conn.execute("BEGIN IMMEDIATE")
        if self.store.retry_before_purge is not None:
            self.conn.execute("UPDATE SyncQueue SET Status = 'Pending', UpdatedAt = ? WHERE EntityKey = ?",
                              (iso(now()), self.store.retry_before_purge))
        removed = 0
        for enqueued_at, updated_at in keys:
            removed += self.conn.execute(
                f"DELETE FROM SyncQueue WHERE EnqueuedAt = ? AND UpdatedAt = ? AND Status IN {FINISHED}",
                (iso(datetime.fromisoformat(enqueued_at)), iso(datetime.fromisoformat(updated_at)))).rowcount
        self.conn.execute("INSERT INTO Calls VALUES ('purge', ?, NULL, NULL)", (len(keys),))
        self.conn.execute("COMMIT")
        return removed

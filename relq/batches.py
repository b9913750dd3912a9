"""Batches from Python: open one naming its callback, enqueue its jobs, seal it, and read
its progress (docs/batches.md). Every call goes through relq.db to the procedures and the
view that keep the rules (dbo.Open_QueueBatch_trx, dbo.Add_<Queue>_trx with @BatchID,
dbo.Seal_QueueBatch_trx, dbo.QueueBatch_V); nothing here decides when a callback fires.

    batch = open_batch(conn, "SyncQueue", "ImportDone", payload={"import": 42}, name="import 42")
    add_jobs(conn, "SyncQueue", [Job("CustomerSync", f"C-{n}") for n in range(1000)], batch_id=batch)
    seal_batch(conn, batch)

Each call is a transaction of its own. An error comes back as relq.db.SqlError with the
procedure's number (relq.errors.Msg: BatchNotFound 735723, BatchSealed 735724,
InvalidParameter 735707)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relq import db
from relq.errors import RelqError

# What a job queue's Add_ takes, one item per element; wide (MAX) columns on purpose, so that
# a value too long for the list type fails the call (8152, with the ANSI_WARNINGS every ODBC
# driver sets) instead of being cut.
_ADD_JOBS = """SET NOCOUNT ON;
DECLARE @Items dbo.{queue}ItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload, ScheduledFor, [Priority], GroupKey, DedupKey)
SELECT j.ItemNo, j.[Type], j.EntityKey, j.Payload, j.ScheduledFor, j.[Priority], j.GroupKey, j.DedupKey
FROM OPENJSON(CAST(? AS NVARCHAR(MAX))) WITH (
    ItemNo INT '$.ItemNo',
    [Type] NVARCHAR(MAX) '$.Type',
    EntityKey NVARCHAR(MAX) '$.EntityKey',
    Payload NVARCHAR(MAX) '$.Payload',
    ScheduledFor DATETIME2(7) '$.ScheduledFor',
    [Priority] INT '$.Priority',
    GroupKey NVARCHAR(MAX) '$.GroupKey',
    DedupKey NVARCHAR(MAX) '$.DedupKey'
) AS j;
EXEC dbo.Add_{queue}_trx @Items = @Items{batch};
"""


def add_jobs_sql(queue: str, *, batch: bool = False) -> str:
    """The batch that enqueues one call's jobs into the job queue ``queue`` through
    dbo.Add_<queue>_trx: its parameter, the items' JSON (:func:`items_json`'s shape), then with
    ``batch`` the BatchID they join. The pipeline's bulk enqueue sends it too."""
    return _ADD_JOBS.format(queue=queue, batch=", @BatchID = ?" if batch else "")


_QUEUE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}")
# A call of Add_ takes at most this many items (a bigger insert would escalate to a table lock).
MAX_ITEMS = 4000

COLUMNS = ("BatchID", "Name", "State", "Total", "Completed", "PartiallyCompleted", "Failed", "Cancelled",
           "Terminated", "Done", "Remaining", "CallbackQueue", "CallbackType", "OpenedAt", "SealedAt",
           "FinishedAt", "CallbackEnqueuedAt")
# The newest first: a backward seek of the view's one table's clustered key.
RECENT = (f"SELECT TOP (?) {', '.join(f'v.[{c}]' for c in COLUMNS)} FROM dbo.QueueBatch_V AS v "
          "ORDER BY v.BatchID DESC;")


@dataclass(frozen=True)
class Job:
    """One job of a job queue: its type, the entity it works on, and the optional columns of
    dbo.<Queue>ItemList (ScheduledFor in UTC)."""

    type: str
    entity_key: str
    payload: Any = None  # JSON-able, or a JSON text
    scheduled_for: datetime | None = None
    priority: int | None = None
    group_key: str | None = None
    dedup_key: str | None = None


@dataclass(frozen=True)
class Batch:
    """A row of dbo.QueueBatch_V: a batch's progress."""

    batch_id: int
    name: str | None
    state: str  # Open, Sealed, Finished or Reopened
    total: int
    completed: int
    partially_completed: int
    failed: int
    cancelled: int
    terminated: int
    done: int
    remaining: int
    callback_queue: str
    callback_type: str
    opened_at: datetime | None = None
    sealed_at: datetime | None = None
    finished_at: datetime | None = None
    callback_enqueued_at: datetime | None = None

    @property
    def percent(self) -> int:
        """How much of it is done, 0 to 100 (an empty batch: 100 once sealed, else 0)."""
        if not self.total:
            return 0 if self.state == "Open" else 100
        return min(100, self.done * 100 // self.total)


def _json_text(payload: Any) -> str | None:
    if payload is None or isinstance(payload, str):
        return payload
    return json.dumps(payload)


def open_batch(conn: Any, callback_queue: str, callback_type: str, *, entity_key: str | None = None,
               payload: Any = None, name: str | None = None) -> int:
    """Open a batch whose callback is a ``callback_type`` job in the job queue
    ``callback_queue``; returns its BatchID. ``payload`` (a dict, or a JSON object's text)
    is what the callback's Payload starts from; "batch" is added to it when it fires."""
    result = db.call(conn, "dbo.Open_QueueBatch_trx", CallbackQueue=callback_queue,
                     CallbackType=callback_type, CallbackEntityKey=entity_key,
                     CallbackPayload=_json_text(payload), Name=name)
    if result.return_code != 0 or not result.result_sets or not result.result_sets[0]:
        raise RelqError("dbo.Open_QueueBatch_trx returned no batch")
    return int(result.result_sets[0][0][0])


def items_json(jobs: Sequence[Job]) -> str:
    """The items of one Add_ call as the JSON its batch reads, ItemNo from 1."""
    return json.dumps([
        {"ItemNo": n, "Type": j.type, "EntityKey": j.entity_key, "Payload": _json_text(j.payload),
         "ScheduledFor": j.scheduled_for.isoformat() if j.scheduled_for else None,
         "Priority": j.priority, "GroupKey": j.group_key, "DedupKey": j.dedup_key}
        for n, j in enumerate(jobs, 1)])


def add_jobs(conn: Any, queue: str, jobs: Sequence[Job], *,
             batch_id: int | None = None) -> list[tuple]:
    """Enqueue ``jobs`` into the job queue ``queue`` (dbo.Add_<queue>_trx), in the open batch
    ``batch_id`` when given: one transaction per call of at most 4,000 jobs. Returns
    Add_'s rows (EnqueuedAt, Type, EntityKey, ItemNo, IsDuplicate)."""
    if not _QUEUE.fullmatch(queue):
        raise ValueError(f"not a queue name: {queue!r}")
    if not 1 <= len(jobs) <= MAX_ITEMS:
        raise ValueError(f"a call enqueues 1 to {MAX_ITEMS} jobs, not {len(jobs)}")
    cursor = conn.cursor()
    try:
        return db.query(cursor, add_jobs_sql(queue, batch=True), items_json(jobs), batch_id)
    finally:
        cursor.close()


def seal_batch(conn: Any, batch_id: int) -> None:
    """Close the batch to new jobs; its callback comes when its last job finishes (at once
    when none is left)."""
    db.call(conn, "dbo.Seal_QueueBatch_trx", BatchID=batch_id)


def rows_to_batches(rows: Iterable[Sequence[Any]]) -> list[Batch]:
    """dbo.QueueBatch_V's rows (in COLUMNS' order) as Batch values."""
    return [Batch(int(r[0]), r[1], r[2], *(int(v) for v in r[3:11]), r[11], r[12], *r[13:17]) for r in rows]


def recent(conn: Any, limit: int = 20) -> list[Batch]:
    """The newest ``limit`` batches, newest first."""
    cursor = conn.cursor()
    try:
        return rows_to_batches(db.query(cursor, RECENT, limit))
    finally:
        cursor.close()


# The view is missing (208: a database deployed before batches) or not granted (229: a login
# without QueueMonitor): `invoke status` says so in its batches line and shows the rest.
UNREADABLE = {208: "dbo.QueueBatch_V is not in this database (deploy this version of relq)",
              229: "this login may not read dbo.QueueBatch_V (grant it the role QueueMonitor)"}


def status_line_of(conn: Any, limit: int = 20) -> str:
    """`invoke status`'s batches line, read from ``conn``; the reason when the view cannot be
    read (UNREADABLE), any other error raised."""
    try:
        return status_line(recent(conn, limit))
    except db.SqlError as exc:
        if exc.number in UNREADABLE:
            return f"batches: {UNREADABLE[exc.number]}"
        raise


def status_line(batches: Sequence[Batch]) -> str:
    """One line for `invoke status`: the batches still running and what they have left."""
    if not batches:
        return "batches: none"
    running = [b for b in batches if b.state in ("Open", "Sealed", "Reopened")]
    left = sum(b.remaining for b in running)
    finished = sum(1 for b in batches if b.state == "Finished")
    parts = [f"{sum(1 for b in running if b.state == 'Open')} open",
             f"{sum(1 for b in running if b.state != 'Open')} sealed and running",
             f"{left} item{'s' if left != 1 else ''} left",
             f"{finished} finished"]
    return f"batches (newest {len(batches)}): " + ", ".join(parts)

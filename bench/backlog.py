"""Backlogs, written set-based straight into the queue tables: a million items in a
few statements instead of a million procedure calls.

The rows are what the queue's own procedures would write. SyncQueue items are as
dbo.Add_SyncQueue_utx inserts them: keys contiguous whole microseconds from
dbo.QueueNextKey_fn of the last key (under an application lock of the feeder's own,
'dbo.SyncQueue', so that two feeders never take the same keys), ScheduledFor and
UpdatedAt equal to the key, Priority 0, no group or dedup key, the defaults for the
rest (Pending, attempt 0). Finished items (for the purge) are as a claim and a
Completed report leave them, with their attempt row.
Notifications are as dbo.Add_Notification_ResetPassword_utx writes them (the base
row, the ResetPassword subtype and an e-mail channel). Messages are as the Send_
procedures write them.

Each statement writes at most ``chunk`` rows in its own transaction; while workers
run (the feeder) ``FEED_CHUNK``, below the 5,000 locks at which SQL Server escalates
one statement's locks to a table lock, which would stall every claim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from relq import db

LOAD_CHUNK = 50_000  # rows per statement while nothing else runs
FEED_CHUNK = 2_000  # rows per statement while workers claim
MESSAGE_QUEUES = ("HeapQueue", "FifoQueue", "LifoStack", "PendingQueue")

# 0 .. 9,999,999: enough rows for any chunk, without depending on a catalog's size.
_NUMBERS = """
WITH d AS (SELECT v.n FROM (VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS v(n)),
numbers AS (
    SELECT TOP (@Count) CAST(ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) - 1 AS INT) AS i
    FROM d AS a CROSS JOIN d AS b CROSS JOIN d AS c CROSS JOIN d AS e
    CROSS JOIN d AS f CROSS JOIN d AS g CROSS JOIN d AS h
)"""

_ENQUEUE_LOCK = """
EXEC @Lock = sys.sp_getapplock
    @Resource = N'{queue}', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 10000;
IF (@Lock < 0) THROW 735709, N'bench: the enqueue lock on {queue} was not granted', 1;"""

_JOB_QUEUE = """
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Count INT = ?;
DECLARE @Lock INT;
DECLARE @First DATETIME2(7);
DECLARE @Type VARCHAR(50) = (SELECT MIN(t.[Type]) FROM dbo.{queue}Type AS t);
BEGIN TRANSACTION;
{lock}
SELECT @First = dbo.QueueNextKey_fn(MAX(q.EnqueuedAt)) FROM dbo.{queue} AS q WITH (READUNCOMMITTED);
{numbers}
INSERT INTO dbo.{queue} (
    EnqueuedAt, [Type], EntityKey, Payload, ScheduledFor, UpdatedAt, [Priority], GroupKey, DedupKey, BatchID
)
SELECT k.EnqueuedAt, @Type, N'bench-' + CONVERT(NVARCHAR(30), k.EnqueuedAt, 126), NULL,
    k.EnqueuedAt, k.EnqueuedAt, 0, NULL, NULL, NULL
FROM numbers AS n
CROSS APPLY (SELECT DATEADD(MICROSECOND, n.i, @First) AS EnqueuedAt) AS k;
COMMIT TRANSACTION;
"""


def job_queue_sql(queue: str) -> str:
    """The loader of a job queue (SyncQueue, or any queue of shape "job" in
    database/queues.toml: the same columns, job types in dbo.<Queue>Type)."""
    if not queue.isidentifier():
        raise ValueError(f"not a queue name: {queue!r}")
    return _JOB_QUEUE.format(queue=queue, lock=_ENQUEUE_LOCK.format(queue=f"dbo.{queue}"), numbers=_NUMBERS)


SYNC_QUEUE = job_queue_sql("SyncQueue")

# Finished a day ago or more (their keys, from two days back, stay below every new key):
# claimed one second after their enqueue (StartedAt and the attempt's token), completed
# one second later (their last token), as Next_ and Modify_ write them.
FINISHED_SYNC_QUEUE = f"""
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Count INT = ?;
DECLARE @Lock INT;
DECLARE @First DATETIME2(7);
BEGIN TRANSACTION;
{_ENQUEUE_LOCK.format(queue="dbo.SyncQueue")}
SELECT @First = ISNULL(
    DATEADD(MICROSECOND, 1, MAX(q.EnqueuedAt)),
    CAST(DATEADD(DAY, -2, SYSUTCDATETIME()) AS DATETIME2(6))
)
FROM dbo.SyncQueue AS q WITH (READUNCOMMITTED);
IF (DATEADD(MICROSECOND, @Count, @First) > DATEADD(DAY, -1, SYSUTCDATETIME()))
    THROW 735707, N'bench: load the finished items before the backlog, into an empty queue', 1;
{_NUMBERS}
INSERT INTO dbo.SyncQueue (
    EnqueuedAt, [Type], EntityKey, Payload, [Status], AttemptNum, Response, StartedAt, Duration,
    ScheduledFor, UpdatedAt, [Priority], LockedBy, LeaseUntil
)
SELECT k.EnqueuedAt, 'CustomerSync', N'bench-done-' + CONVERT(NVARCHAR(30), k.EnqueuedAt, 126), NULL,
    'Completed', 1, N'bench', DATEADD(SECOND, 1, k.EnqueuedAt), 1000,
    k.EnqueuedAt, DATEADD(SECOND, 2, k.EnqueuedAt), 0, N'bench/fixture', NULL
FROM numbers AS n
CROSS APPLY (SELECT DATEADD(MICROSECOND, n.i, @First) AS EnqueuedAt) AS k;
INSERT INTO dbo.SyncQueueAttempt (
    EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response
)
SELECT q.EnqueuedAt, q.StartedAt, 1, NULL, q.LockedBy, 'Completed', q.Duration, N'bench'
FROM dbo.SyncQueue AS q
WHERE q.EnqueuedAt >= @First AND q.EnqueuedAt < DATEADD(MICROSECOND, @Count, @First);
COMMIT TRANSACTION;
"""

NOTIFICATION = f"""
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Count INT = ?;
DECLARE @Lock INT;
DECLARE @First DATETIME2(7);
BEGIN TRANSACTION;
{_ENQUEUE_LOCK.format(queue="dbo.Notification")}
SELECT @First = dbo.QueueNextKey_fn(MAX(n.EnqueuedAt)) FROM dbo.Notification AS n WITH (READUNCOMMITTED);
{_NUMBERS}
INSERT INTO dbo.Notification (EnqueuedAt, [Type], ScheduledFor, UpdatedAt, [Priority], GroupKey, DedupKey)
SELECT k.EnqueuedAt, 'ResetPassword', k.EnqueuedAt, k.EnqueuedAt, 0, NULL, NULL
FROM numbers AS n
CROSS APPLY (SELECT DATEADD(MICROSECOND, n.i, @First) AS EnqueuedAt) AS k;
INSERT INTO dbo.Notification_ResetPassword (EnqueuedAt, OTP, UserID, Username)
SELECT n.EnqueuedAt,
    'B' + RIGHT('00000' + CAST(ROW_NUMBER() OVER (ORDER BY n.EnqueuedAt) % 100000 AS VARCHAR(6)), 5),
    1 + ROW_NUMBER() OVER (ORDER BY n.EnqueuedAt) % 2000000000, N'bench'
FROM dbo.Notification AS n
WHERE n.EnqueuedAt >= @First AND n.EnqueuedAt < DATEADD(MICROSECOND, @Count, @First);
INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage)
SELECT n.EnqueuedAt, N'bench@example.com', N'en'
FROM dbo.Notification AS n
WHERE n.EnqueuedAt >= @First AND n.EnqueuedAt < DATEADD(MICROSECOND, @Count, @First);
COMMIT TRANSACTION;
"""

_MESSAGES = {
    "HeapQueue": "INSERT INTO dbo.HeapQueue (Payload) SELECT CAST(n.i AS VARBINARY(8)) FROM numbers AS n;",
    "FifoQueue": "INSERT INTO dbo.FifoQueue (Payload) SELECT CAST(n.i AS VARBINARY(8)) FROM numbers AS n;",
    "LifoStack": "INSERT INTO dbo.LifoStack (Payload) SELECT CAST(n.i AS VARBINARY(8)) FROM numbers AS n;",
    "PendingQueue": ("INSERT INTO dbo.PendingQueue (Payload, DueAt) "
                     "SELECT CAST(n.i AS VARBINARY(8)), SYSUTCDATETIME() FROM numbers AS n;"),
}


def message_sql(kind: str) -> str:
    """The batch that sends ``?`` messages to a message queue, as its Send_ procedure would."""
    if kind not in _MESSAGES:
        raise ValueError(f"not a message queue: {kind} (one of {', '.join(MESSAGE_QUEUES)})")
    return f"SET NOCOUNT ON;\nDECLARE @Count INT = ?;\n{_NUMBERS}\n{_MESSAGES[kind]}\n"


def chunks(total: int, size: int) -> Iterator[int]:
    """``total`` split into pieces of at most ``size``: 120,000 by 50,000 is 50,000, 50,000, 20,000."""
    if size < 1:
        raise ValueError(f"a chunk holds at least one row, not {size}")
    if total < 0:
        raise ValueError(f"a backlog is not negative: {total}")
    done = 0
    while done < total:
        yield min(size, total - done)
        done += size


def load(conn: Any, sql: str, total: int, chunk: int = LOAD_CHUNK,
         progress: Callable[[int], None] | None = None) -> int:
    """Run the loader ``sql`` until ``total`` rows are written; ``progress`` gets each chunk's size."""
    cursor = conn.cursor()
    try:
        for count in chunks(total, chunk):
            db.query(cursor, sql, count)
            if progress is not None:
                progress(count)
    finally:
        cursor.close()
    return total


def queue_sql(queue: str) -> str:
    """The loader of a queue the benchmark works on: SyncQueue or a message queue."""
    return SYNC_QUEUE if queue == "SyncQueue" else message_sql(queue)

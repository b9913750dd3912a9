SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueItemKey_V: the key of every item of every relational queue, [Queue]
   and EnqueuedAt, and nothing else: the dashboard's /metrics counts the items
   enqueued from it (relq/dashboard/metrics.py), as QueueMonitor
   (database/security/QueueMonitor.sql). A key is when its item was enqueued,
   in UTC, and keys only move forward (dbo.QueueNextKey_fn). An item purged
   (dbo.Purge_<Queue>_trx, with or without its archive copy) is gone from it.
   Read it by key: WHERE EnqueuedAt >= @Since is a range seek on each queue's
   clustered key, PK_<Queue>, so a read costs what was enqueued since @Since,
   however many items a queue keeps. A view that is not indexed is resolved into
   the statement that reads it, one plan for both ("View Resolution",
   https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms190237(v=sql.105)),
   so the predicate reaches each branch's own table; each branch gives EnqueuedAt
   bare, with no expression around it, so that the predicate is the seek's start. */
CREATE OR ALTER VIEW dbo.QueueItemKey_V
AS
SELECT
    'Notification' AS [Queue],
    n.EnqueuedAt
FROM dbo.Notification AS n
UNION ALL
SELECT
    'SyncQueue' AS [Queue],
    q.EnqueuedAt
FROM dbo.SyncQueue AS q;
GO

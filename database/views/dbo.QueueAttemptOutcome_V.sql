SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueAttemptOutcome_V: the attempts of every relational queue, one row per
   claim of an item (dbo.<Queue>Attempt), with only what counting them needs:
   [Queue]; EnqueuedAt and StartedAt, which together name the attempt; Outcome,
   NULL while it runs; Duration in milliseconds, NULL when nobody knows when the
   work stopped. The dashboard's /metrics counts the attempts that ended from it
   (relq/dashboard/metrics.py), as QueueMonitor (database/security/QueueMonitor.sql).
   It has no Response, Error or LockedBy: an attempt's texts may carry personal
   data, which is why QueueMonitor reads this view and not dbo.QueueAttempt_V.
   Read it by StartedAt: WHERE StartedAt >= @Since is a range seek on each queue's
   IX_<Queue>Attempt_Started, so a read costs what started since @Since, however
   many attempts a queue keeps until its purge. A view that is not indexed is
   resolved into the statement that reads it, one plan for both ("View
   Resolution",
   https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms190237(v=sql.105)),
   so the predicate reaches each branch's own table; each branch gives StartedAt
   bare, with no expression around it, so that the predicate is the seek's start.
   The index is keyed StartedAt and includes Outcome and Duration; it holds the
   clustered key (EnqueuedAt, StartedAt) too, as every nonclustered index of a
   table with a clustered index holds it as its row locator ("Nonclustered Index
   Structures",
   https://learn.microsoft.com/previous-versions/sql/sql-server-2005/ms177484(v=sql.90)),
   so it covers every column here and no read needs a lookup. */
CREATE OR ALTER VIEW dbo.QueueAttemptOutcome_V
AS
SELECT
    'Notification' AS [Queue],
    a.EnqueuedAt,
    a.StartedAt,
    a.Outcome,
    a.Duration
FROM dbo.NotificationAttempt AS a
UNION ALL
SELECT
    'SyncQueue' AS [Queue],
    a.EnqueuedAt,
    a.StartedAt,
    a.Outcome,
    a.Duration
FROM dbo.SyncQueueAttempt AS a;
GO

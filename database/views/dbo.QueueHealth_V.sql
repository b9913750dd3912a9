SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueHealth_V: the health of every relational queue, one row per queue and
   unfinished state (Pending, Processing, Error, Paused: the states where
   dbo.QueueIsFinished_fn = 0; 0 items when none is in it):
     Items             how many items are in that state;
     OldestDueSeconds  for Pending and Error, how long the oldest item that is
                       due has waited since ScheduledFor; items scheduled for
                       later do not count, so a backlog of future work raises no
                       alarm (NULL: none is due);
     PastLease         for Processing, how many items' lease has run out: their
                       worker is gone, and the next claim takes them back.
   Its cost follows the unfinished items, not the history: it reads each queue's
   IX_<Queue>_Status, which holds the unfinished items only (filtered
   WHERE [Status] IN ('Pending', 'Processing', 'Error', 'Paused')) and carries
   ScheduledFor and LeaseUntil, so it covers this query. Each branch states that
   filter as its own predicate, literally and with no parameter: the optimizer
   uses a filtered index only for a query whose predicate selects a subset of the
   filter, and it can prove that from a view's literal predicate, not from a
   parameter whose value it does not know when it compiles ("Create filtered
   indexes", https://learn.microsoft.com/sql/relational-databases/indexes/create-filtered-indexes;
   "Filtered index design guidelines",
   https://learn.microsoft.com/sql/relational-databases/sql-server-index-design-guide).
   Keep the list in step with dbo.QueueIsFinished_fn and the index's filter.
   Finished items have no row here: counting them read every item a queue kept
   until its purge. What a queue finished lately comes from dbo.QueueThroughput_V
   (outcomes per minute over its last 15 minutes, a bounded window of the
   attempt history); a finished item is found by its key or in a list of the
   dashboard, never counted. */
CREATE OR ALTER VIEW dbo.QueueHealth_V
AS
WITH
NotificationUnfinished AS (
    SELECT
        u.[Status],
        COUNT(*) AS Items,
        MIN(
            CASE WHEN u.[Status] IN ('Pending', 'Error') AND u.ScheduledFor <= SYSUTCDATETIME() THEN u.ScheduledFor END
        ) AS OldestDue,
        COUNT(CASE WHEN u.[Status] = 'Processing' AND u.LeaseUntil < SYSUTCDATETIME() THEN 1 END) AS PastLease
    FROM dbo.Notification AS u
    WHERE u.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
    GROUP BY u.[Status]
),

SyncQueueUnfinished AS (
    SELECT
        u.[Status],
        COUNT(*) AS Items,
        MIN(
            CASE WHEN u.[Status] IN ('Pending', 'Error') AND u.ScheduledFor <= SYSUTCDATETIME() THEN u.ScheduledFor END
        ) AS OldestDue,
        COUNT(CASE WHEN u.[Status] = 'Processing' AND u.LeaseUntil < SYSUTCDATETIME() THEN 1 END) AS PastLease
    FROM dbo.SyncQueue AS u
    WHERE u.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
    GROUP BY u.[Status]
)

SELECT
    'Notification' AS [Queue],
    s.[Status],
    ISNULL(n.Items, 0) AS Items,
    DATEDIFF_BIG(SECOND, n.OldestDue, SYSUTCDATETIME()) AS OldestDueSeconds,
    ISNULL(n.PastLease, 0) AS PastLease
FROM dbo.QueueStatus AS s
LEFT JOIN NotificationUnfinished AS n ON s.[Status] = n.[Status]
WHERE s.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
UNION ALL
SELECT
    'SyncQueue' AS [Queue],
    s.[Status],
    ISNULL(q.Items, 0) AS Items,
    DATEDIFF_BIG(SECOND, q.OldestDue, SYSUTCDATETIME()) AS OldestDueSeconds,
    ISNULL(q.PastLease, 0) AS PastLease
FROM dbo.QueueStatus AS s
LEFT JOIN SyncQueueUnfinished AS q ON s.[Status] = q.[Status]
WHERE s.[Status] IN ('Pending', 'Processing', 'Error', 'Paused');
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueHealth_V: the health of every relational queue, one row per queue and
   state (every state of dbo.QueueStatus, 0 when none is in it):
     Items             how many items are in that state;
     OldestDueSeconds  for Pending and Error, how long the oldest item that is
                       due has waited since ScheduledFor; items scheduled for
                       later do not count, so a backlog of future work raises no
                       alarm (NULL: none is due);
     PastLease         for Processing, how many items' lease has run out: their
                       worker is gone, and the next claim takes them back.
   Read from each queue's health index (IX_<Queue>_Status), not its rows. */
CREATE OR ALTER VIEW dbo.QueueHealth_V
AS
SELECT
    'Notification' AS [Queue],
    s.[Status],
    COUNT(n.EnqueuedAt) AS Items,
    DATEDIFF_BIG(
        SECOND,
        MIN(
            CASE WHEN n.[Status] IN ('Pending', 'Error') AND n.ScheduledFor <= SYSUTCDATETIME() THEN n.ScheduledFor END
        ),
        SYSUTCDATETIME()
    ) AS OldestDueSeconds,
    COUNT(CASE WHEN n.[Status] = 'Processing' AND n.LeaseUntil < SYSUTCDATETIME() THEN 1 END) AS PastLease
FROM dbo.QueueStatus AS s
LEFT JOIN dbo.Notification AS n ON s.[Status] = n.[Status]
GROUP BY s.[Status]
UNION ALL
SELECT
    'SyncQueue' AS [Queue],
    s.[Status],
    COUNT(q.EnqueuedAt) AS Items,
    DATEDIFF_BIG(
        SECOND,
        MIN(
            CASE WHEN q.[Status] IN ('Pending', 'Error') AND q.ScheduledFor <= SYSUTCDATETIME() THEN q.ScheduledFor END
        ),
        SYSUTCDATETIME()
    ) AS OldestDueSeconds,
    COUNT(CASE WHEN q.[Status] = 'Processing' AND q.LeaseUntil < SYSUTCDATETIME() THEN 1 END) AS PastLease
FROM dbo.QueueStatus AS s
LEFT JOIN dbo.SyncQueue AS q ON s.[Status] = q.[Status]
GROUP BY s.[Status];
GO

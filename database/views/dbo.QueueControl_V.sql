SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueControl_V: the operating controls of every relational queue, one row per
   queue (Type NULL) and one per job type of it, whether or not dbo.QueueControl has a
   row for it (no row: running, no limit):
     IsPaused        1 while the queue or type itself is paused (dbo.Pause_Queue_trx);
     ClaimsPaused    1 while claims take nothing of it: it or its queue is paused;
     PausedBy, PausedAt, PauseReason   the last pause: who, when (UTC), why;
     ResumedBy, ResumedAt              who resumed it since, and when (NULL: paused,
                                       or never resumed);
     TypeLimit       a type's limit of items in Processing at once (NULL: none);
     GroupLimit      a queue's limit of items of one GroupKey in Processing (1 unless
                     dbo.Limit_Queue_trx set another);
     LimitSetBy, LimitSetAt            who set the row's limit last, and when;
     Processing      items in Processing, a lease that ran out or not: the queue's, or
                     the type's (the slots a limit counts: an item holds its slot until
                     it leaves Processing).
   Processing reads IX_<Queue>_Lease, which holds the items in Processing only (as
   many as the workers have in hand) and carries their type, each branch stating its
   filter literally, as the
   optimizer uses a filtered index only for a predicate it can prove is a subset ("Create
   filtered indexes",
   https://learn.microsoft.com/sql/relational-databases/indexes/create-filtered-indexes). */
CREATE OR ALTER VIEW dbo.QueueControl_V
AS
SELECT
    N'Notification' AS [Queue],
    CAST(NULL AS VARCHAR(50)) AS [Type],
    CAST(ISNULL(c.IsPaused, 0) AS BIT) AS IsPaused,
    CAST(ISNULL(c.IsPaused, 0) AS BIT) AS ClaimsPaused,
    c.PausedBy,
    c.PausedAt,
    c.PauseReason,
    c.ResumedBy,
    c.ResumedAt,
    CAST(NULL AS SMALLINT) AS TypeLimit,
    CAST(ISNULL(c.GroupLimit, 1) AS SMALLINT) AS GroupLimit,
    c.LimitSetBy,
    c.LimitSetAt,
    (
        SELECT COUNT(*) FROM dbo.Notification AS u
        WHERE u.[Status] = 'Processing'
    ) AS Processing
FROM (SELECT N'Notification' AS [Queue]) AS o
LEFT JOIN dbo.QueueControl AS c ON o.[Queue] = c.[Queue] AND c.[Type] = ''
UNION ALL
SELECT
    N'Notification' AS [Queue],
    t.[Type],
    CAST(ISNULL(c.IsPaused, 0) AS BIT) AS IsPaused,
    CAST(CASE WHEN c.IsPaused = 1 OR p.IsPaused = 1 THEN 1 ELSE 0 END AS BIT) AS ClaimsPaused,
    c.PausedBy,
    c.PausedAt,
    c.PauseReason,
    c.ResumedBy,
    c.ResumedAt,
    c.TypeLimit,
    CAST(NULL AS SMALLINT) AS GroupLimit,
    c.LimitSetBy,
    c.LimitSetAt,
    (
        SELECT COUNT(*) FROM dbo.Notification AS u
        WHERE u.[Status] = 'Processing' AND u.[Type] = t.[Type]
    ) AS Processing
FROM dbo.NotificationType AS t
LEFT JOIN dbo.QueueControl AS c ON c.[Queue] = N'Notification' AND t.[Type] = c.[Type]
LEFT JOIN dbo.QueueControl AS p ON p.[Queue] = N'Notification' AND p.[Type] = ''
UNION ALL
SELECT
    N'SyncQueue' AS [Queue],
    CAST(NULL AS VARCHAR(50)) AS [Type],
    CAST(ISNULL(c.IsPaused, 0) AS BIT) AS IsPaused,
    CAST(ISNULL(c.IsPaused, 0) AS BIT) AS ClaimsPaused,
    c.PausedBy,
    c.PausedAt,
    c.PauseReason,
    c.ResumedBy,
    c.ResumedAt,
    CAST(NULL AS SMALLINT) AS TypeLimit,
    CAST(ISNULL(c.GroupLimit, 1) AS SMALLINT) AS GroupLimit,
    c.LimitSetBy,
    c.LimitSetAt,
    (
        SELECT COUNT(*) FROM dbo.SyncQueue AS u
        WHERE u.[Status] = 'Processing'
    ) AS Processing
FROM (SELECT N'SyncQueue' AS [Queue]) AS o
LEFT JOIN dbo.QueueControl AS c ON o.[Queue] = c.[Queue] AND c.[Type] = ''
UNION ALL
SELECT
    N'SyncQueue' AS [Queue],
    t.[Type],
    CAST(ISNULL(c.IsPaused, 0) AS BIT) AS IsPaused,
    CAST(CASE WHEN c.IsPaused = 1 OR p.IsPaused = 1 THEN 1 ELSE 0 END AS BIT) AS ClaimsPaused,
    c.PausedBy,
    c.PausedAt,
    c.PauseReason,
    c.ResumedBy,
    c.ResumedAt,
    c.TypeLimit,
    CAST(NULL AS SMALLINT) AS GroupLimit,
    c.LimitSetBy,
    c.LimitSetAt,
    (
        SELECT COUNT(*) FROM dbo.SyncQueue AS u
        WHERE u.[Status] = 'Processing' AND u.[Type] = t.[Type]
    ) AS Processing
FROM dbo.SyncQueueType AS t
LEFT JOIN dbo.QueueControl AS c ON c.[Queue] = N'SyncQueue' AND t.[Type] = c.[Type]
LEFT JOIN dbo.QueueControl AS p ON p.[Queue] = N'SyncQueue' AND p.[Type] = '';
GO

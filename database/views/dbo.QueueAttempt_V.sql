SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueAttempt_V: the attempt history of every relational queue, one row per
   claim of an item (dbo.<Queue>Attempt), with the queue's name in [Queue], so that
   an operator (QueueAdmin, database/security/QueueAdmin.sql) reads an item's
   attempts without a right on the attempt tables. Ask for one queue's item:
   WHERE [Queue] = 'Notification' AND EnqueuedAt = @Key seeks that queue's
   clustered key (EnqueuedAt, StartedAt); the other branches' constant [Queue]
   fails the predicate, so their tables need not be read (a startup filter when
   the name is a parameter). Outcome is NULL while the attempt
   runs; Duration NULL when nobody knows when the work stopped. */
CREATE OR ALTER VIEW dbo.QueueAttempt_V
AS
SELECT
    'Notification' AS [Queue],
    a.EnqueuedAt,
    a.StartedAt,
    a.AttemptNum,
    a.[Step],
    a.LockedBy,
    a.Outcome,
    a.Duration,
    a.Response,
    a.Error
FROM dbo.NotificationAttempt AS a
UNION ALL
SELECT
    'SyncQueue' AS [Queue],
    a.EnqueuedAt,
    a.StartedAt,
    a.AttemptNum,
    a.[Step],
    a.LockedBy,
    a.Outcome,
    a.Duration,
    a.Response,
    a.Error
FROM dbo.SyncQueueAttempt AS a;
GO

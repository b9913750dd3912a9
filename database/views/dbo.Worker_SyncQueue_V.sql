SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Worker_SyncQueue_V: what a worker sees of a sync job. Next_ and Modify_
   return their item through it. */
CREATE OR ALTER VIEW dbo.Worker_SyncQueue_V
AS
SELECT
    q.EnqueuedAt,
    q.[Type],
    q.EntityKey,
    q.Payload,
    q.[Status],
    q.[Step],
    q.AttemptNum,
    q.ScheduledFor,
    q.StartedAt,
    q.Duration,
    q.UpdatedAt,
    q.LockedBy,
    q.LeaseUntil,
    q.[Priority],
    q.GroupKey,
    q.DedupKey,
    q.Response,
    q.Error
FROM dbo.SyncQueue AS q;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueBatch_V: the progress of every batch (dbo.QueueBatch), one row each:
     State        Open (items may still join), Sealed (closed to new items, some left
                  to finish), Finished (its callback enqueued, nothing left) or
                  Reopened (its callback enqueued, but an item of it was retried
                  since and is not finished again: no second callback comes);
     Total        the items that joined it;
     Completed, PartiallyCompleted, Failed, Cancelled, Terminated: its items in each
                  final state now;
     Done, Remaining: their sum, and Total minus it;
     OpenedAt, SealedAt, FinishedAt, CallbackEnqueuedAt (the callback item's key in
                  CallbackQueue): UTC.
   It reads the batch rows only, never a queue: a batch's counts are kept on its row by
   every final report (dbo.Count_QueueBatch_utx). The newest first is a backward seek of
   the clustered key (ORDER BY BatchID DESC). */
CREATE OR ALTER VIEW dbo.QueueBatch_V
AS
SELECT
    b.BatchID,
    b.[Name],
    CASE
        WHEN b.SealedAt IS NULL THEN 'Open'
        WHEN b.CallbackEnqueuedAt IS NULL THEN 'Sealed'
        WHEN b.Completed + b.PartiallyCompleted + b.Failed + b.Cancelled + b.Terminated < b.Total THEN 'Reopened'
        ELSE 'Finished'
    END AS [State],
    b.Total,
    b.Completed,
    b.PartiallyCompleted,
    b.Failed,
    b.Cancelled,
    b.Terminated,
    b.Completed + b.PartiallyCompleted + b.Failed + b.Cancelled + b.Terminated AS Done,
    b.Total - (b.Completed + b.PartiallyCompleted + b.Failed + b.Cancelled + b.Terminated) AS Remaining,
    b.CallbackQueue,
    b.CallbackType,
    b.OpenedAt,
    b.SealedAt,
    b.FinishedAt,
    b.CallbackEnqueuedAt
FROM dbo.QueueBatch AS b;
GO

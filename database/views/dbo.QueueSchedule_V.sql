SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueSchedule_V: the recurring schedules (dbo.QueueSchedule), every column, for
   `invoke schedule.list`, monitoring and the schedulers. A scheduler's read of the due
   schedules of its queue states the filtered index's predicate literally, so that it is one
   seek on IX_QueueSchedule_Due:
     WHERE [Queue] = @Queue AND PausedAt IS NULL AND NextSlotAt <= SYSUTCDATETIME()
   Under READ_COMMITTED_SNAPSHOT that read may see a schedule just fired by another
   scheduler: harmless, the fire's compare-and-set decides (dbo.Fire_QueueSchedule_trx). */
CREATE OR ALTER VIEW dbo.QueueSchedule_V
AS
SELECT
    s.[Name],
    s.[Queue],
    s.[Type],
    s.Payload,
    s.EntityKey,
    s.[Priority],
    s.GroupKey,
    s.CronExpr,
    s.IntervalSeconds,
    s.Misfire,
    s.CatchUpMax,
    s.NextSlotAt,
    s.LastSlotAt,
    s.LastEnqueuedAt,
    s.PausedAt,
    s.PausedBy,
    s.CreatedAt,
    s.CreatedBy
FROM dbo.QueueSchedule AS s;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueScheduleRefusal_fn: why a schedule cannot enqueue jobs of @Type into @Queue, or
   NULL when it can. dbo.Add_QueueSchedule_trx and dbo.Fire_QueueSchedule_trx ask it.
   A schedule enqueues through the queue's job-shaped dbo.Add_<Queue>_utx, whose items are
   a type, an entity key and a JSON payload: so the queue is a job queue (database/queues.toml,
   shape "job"), the type one of its types, and not a type with subtype columns that must be
   filled (a schedule has no value for them; a type whose subtype columns may all be NULL is
   scheduled with them NULL). A custom queue (its Add_ takes the domain's own columns) is
   refused. Rendered for every queue from its template.
   @Queue: the queue's name. @Type: the job type. */
CREATE OR ALTER FUNCTION dbo.QueueScheduleRefusal_fn(@Queue SYSNAME, @Type VARCHAR(50))
RETURNS NVARCHAR(200)
AS
BEGIN
    RETURN CASE
        WHEN @Queue = N'Notification'
            THEN N'a custom queue: its enqueue takes the domain''s own columns, not a payload'
        WHEN @Queue = N'SyncQueue'
            THEN CASE
                WHEN
                    NOT EXISTS (
                        SELECT 1 FROM dbo.SyncQueueType AS t
                        WHERE t.[Type] = @Type
                    )
                    THEN
                        N'it is not one of dbo.SyncQueueType'
            END
        ELSE N'no job queue of this database has that name'
    END;
END;
GO

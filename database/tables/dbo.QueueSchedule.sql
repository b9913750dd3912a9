SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueSchedule: recurring jobs. Each row enqueues a job of one type into one job queue
   (dbo.Add_<Queue>_utx) at every slot of its cron expression or interval, in UTC, exactly
   once per slot however many schedulers run (dbo.Fire_QueueSchedule_trx says how). Rows are
   written by dbo.Add_QueueSchedule_trx, dbo.Pause_QueueSchedule_trx,
   dbo.Resume_QueueSchedule_trx, dbo.Delete_QueueSchedule_trx and the fire; read through
   dbo.QueueSchedule_V.
   Name: the key, chosen by the one who adds it (1 to 128 characters).
   Queue, Type: the job queue and its job type the jobs are enqueued as.
   Payload, EntityKey, Priority, GroupKey: the job's own columns, the same for every slot
     (Add_'s rules: Payload JSON or NULL, EntityKey required, Priority 0 by default,
     GroupKey NULL for none).
   CronExpr: a cron expression in UTC (5 fields, or 6 with seconds first), evaluated by the
     scheduler in Python (relq.cadence); IntervalSeconds: or a fixed interval, 1 s to 366
     days, the slots NextSlotAt plus whole intervals. Exactly one of the two.
   Misfire: what a scheduler does with the slots that passed while none ran: 'Skip' enqueues
     the latest of them alone; 'CatchUp' the latest CatchUpMax of them (1 to 1000), one job
     each, oldest first. CatchUpMax is NULL for 'Skip'.
   NextSlotAt: the next slot to enqueue (UTC); the compare-and-set of the fire moves it.
   LastSlotAt, LastEnqueuedAt: the last slot enqueued and the key its job got (the key of the
     unfinished job it matched, when a job with its DedupKey was still there); NULL before
     the first.
   PausedAt, PausedBy: when and by whom the schedule was paused; NULL when it runs.
   CreatedAt, CreatedBy: when and by whom it was added. */
IF OBJECT_ID(N'dbo.QueueSchedule', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.QueueSchedule (
            [Name] dbo.[Name],
            [Queue] SYSNAME NOT NULL,
            [Type] dbo.[_Type],
            Payload dbo.JsonDoc NULL,
            EntityKey dbo.EntityKey,
            [Priority] dbo.QueuePriority CONSTRAINT DF_QueueSchedule_Priority DEFAULT (0),
            GroupKey dbo.GroupKey NULL,
            CronExpr VARCHAR(200) NULL,
            IntervalSeconds INT NULL,
            Misfire VARCHAR(10) NOT NULL,
            CatchUpMax INT NULL,
            NextSlotAt dbo.[_Timestamp],
            LastSlotAt DATETIME2(7) NULL,
            LastEnqueuedAt DATETIME2(7) NULL,
            PausedAt DATETIME2(7) NULL,
            PausedBy NVARCHAR(128) NULL,
            CreatedAt dbo.[_Timestamp] CONSTRAINT DF_QueueSchedule_CreatedAt DEFAULT (SYSUTCDATETIME()),
            CreatedBy NVARCHAR(128) NOT NULL,
            CONSTRAINT PK_QueueSchedule PRIMARY KEY CLUSTERED ([Name]),
            CONSTRAINT QueueSchedule_Has_OneCadence CHECK (
                (CronExpr IS NOT NULL AND IntervalSeconds IS NULL)
                OR (CronExpr IS NULL AND IntervalSeconds IS NOT NULL)
            ),
            CONSTRAINT QueueSchedule_IntervalIsWithin_OneYear CHECK (IntervalSeconds BETWEEN 1 AND 31622400),
            CONSTRAINT QueueSchedule_CronIs_NotBlank CHECK (LTRIM(RTRIM(CronExpr)) <> ''),
            CONSTRAINT QueueSchedule_MisfireIs_SkipOrCatchUp CHECK (
                (Misfire = 'Skip' AND CatchUpMax IS NULL)
                OR (Misfire = 'CatchUp' AND CatchUpMax BETWEEN 1 AND 1000)
            ),
            CONSTRAINT QueueSchedule_PayloadIs_Json CHECK (ISJSON(Payload) = 1),
            CONSTRAINT QueueSchedule_IsPausedBy_Someone CHECK (
                (PausedAt IS NULL AND PausedBy IS NULL) OR (PausedAt IS NOT NULL AND PausedBy IS NOT NULL)
            )
        );
    END;
GO
/* The schedulers' one read: the due schedules of a queue that are not paused, in slot order
   (dbo.QueueSchedule_V with Queue = @Queue, PausedAt IS NULL and NextSlotAt <= now): a seek
   on this filtered index, whose predicate the read states literally so that it serves. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_QueueSchedule_Due' AND object_id = OBJECT_ID(N'dbo.QueueSchedule')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_QueueSchedule_Due
            ON dbo.QueueSchedule ([Queue], NextSlotAt)
            WHERE PausedAt IS NULL;
    END;
GO

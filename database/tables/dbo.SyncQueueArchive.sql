SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueArchive: finished sync jobs that dbo.Purge_SyncQueue_trx moved
   out of the queue (@Archive = 1) instead of only deleting them: one row per
   item, as dbo.Worker_SyncQueue_V showed it at the purge, and when it was
   archived (ArchivedAt, UTC). The attempt history is not kept.
   Why: dbo.SyncQueue stays small (its health counts, statistics, backups and
   maintenance grow with it), while which entity was synced, with what payload
   and outcome, stays available for as long as the DBA wants it.
   Nothing references this table and it references nothing, so the DBA may
   export it, delete from it or truncate it at any time; no procedure reads it.
   Duration (ms, the last attempt's) comes after ArchivedAt: databases that had the
   table before it got it from V0003__archive_duration.sql, and their older rows have none.
   BatchID, last: the batch the item belonged to (dbo.QueueBatch; NULL: none);
   databases that had the table before it got it from V0020, and their older rows
   have none. */
IF OBJECT_ID(N'dbo.SyncQueueArchive', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.SyncQueueArchive (
            EnqueuedAt dbo.[_Timestamp],
            [Type] dbo.[_Type],
            EntityKey dbo.EntityKey,
            Payload dbo.JsonDoc NULL,
            [Status] dbo.QueueState,
            [Step] dbo.QueueStep NULL,
            AttemptNum dbo.AttemptNum,
            ScheduledFor dbo.[_Timestamp],
            StartedAt dbo.[_Timestamp] NULL,
            UpdatedAt dbo.[_Timestamp],
            LockedBy dbo.WorkerName NULL,
            LeaseUntil dbo.[_Timestamp] NULL,
            [Priority] dbo.QueuePriority,
            GroupKey dbo.GroupKey NULL,
            DedupKey dbo.DedupKey NULL,
            Response dbo.WebResponse,
            Error dbo.WebResponse,
            ArchivedAt dbo.[_Timestamp] CONSTRAINT DF_SyncQueueArchive_ArchivedAt DEFAULT (SYSUTCDATETIME()),
            Duration dbo.Duration NULL,
            BatchID INT NULL,
            CONSTRAINT PK_SyncQueueArchive PRIMARY KEY CLUSTERED (EnqueuedAt, ArchivedAt)
        );
    END;
GO

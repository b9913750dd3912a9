SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueue: one queue serving several job types (dbo.SyncQueueType),
   all sharing the lifecycle columns of seed 000: which entity to sync, with an
   optional JSON payload. Keys and tokens as in dbo.Notification: UTC, handed
   out under an application lock on 'dbo.SyncQueue' so they never collide.
   Leases, priority, groups and deduplication as in dbo.Notification; one row per claim in dbo.SyncQueueAttempt. */
IF OBJECT_ID(N'dbo.SyncQueue', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.SyncQueue (
            EnqueuedAt dbo.[_Timestamp],
            [Type] dbo.[_Type],
            EntityKey dbo.EntityKey,
            Payload dbo.JsonDoc NULL,
            [Status] dbo.QueueState CONSTRAINT DF_SyncQueue_Status DEFAULT ('Pending'),
            [Step] dbo.QueueStep NULL,
            AttemptNum dbo.AttemptNum CONSTRAINT DF_SyncQueue_AttemptNum DEFAULT (0),
            Response dbo.WebResponse CONSTRAINT DF_SyncQueue_Response DEFAULT (N''),
            Error dbo.WebResponse CONSTRAINT DF_SyncQueue_Error DEFAULT (N''),
            StartedAt dbo.[_Timestamp] NULL,
            Duration dbo.Duration NULL,
            ScheduledFor dbo.[_Timestamp],
            UpdatedAt dbo.[_Timestamp],
            [Priority] dbo.QueuePriority CONSTRAINT DF_SyncQueue_Priority DEFAULT (0),
            GroupKey dbo.GroupKey NULL,
            DedupKey dbo.DedupKey NULL,
            LockedBy dbo.WorkerName NULL,
            LeaseUntil dbo.[_Timestamp] NULL,
            CONSTRAINT PK_SyncQueue PRIMARY KEY CLUSTERED (EnqueuedAt),
            CONSTRAINT SyncQueue_IsClassifiedBy_SyncQueueType FOREIGN KEY ([Type])
            REFERENCES dbo.SyncQueueType ([Type]),
            CONSTRAINT SyncQueue_IsStatedBy_QueueStatus FOREIGN KEY ([Status])
            REFERENCES dbo.QueueStatus ([Status]),
            CONSTRAINT SyncQueue_Has_AttemptsNotBelowZero CHECK (AttemptNum >= 0),
            CONSTRAINT SyncQueue_Carries_JsonPayload CHECK (Payload IS NULL OR ISJSON(Payload) = 1)
        );
    END;
GO
/* The claim index: keyed [Type], then Priority (highest first), then ScheduledFor,
   then the clustered key EnqueuedAt (which every nonclustered index carries).
   Next_SyncQueue_utx walks the Priority levels from the highest down (one
   seek a type finds the next) and reads each level's band of a type with one
   seek, ScheduledFor <= now a range of the seek, not a residual predicate,
   until it has read enough. A claim therefore reads the levels and the due work
   only, never the items scheduled for later, nor other types' items when it
   names a type: its cost does not grow with the backlog of future or foreign
   work. Its filter matches the
   claim's literal predicate, which is what lets the optimizer use a filtered
   index; [Status] is included because the claim tells Error items from Pending
   ones (past the attempt limit the first fail, the second wait). UpdatedAt is
   left out on purpose: the claim reads it from the row itself, so that its
   UPDLOCK and READPAST hold the row as well as this entry. A Modify_ locks the
   row first and this entry second; a claim that held only the entry could
   deadlock with it.
   Databases deployed before get the index from V0001__worker_lifecycle.sql and
   these keys from V0005. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Due' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Due
            ON dbo.SyncQueue ([Type], [Priority] DESC, ScheduledFor)
            INCLUDE (AttemptNum, GroupKey, [Status])
            WHERE ([Status] IN ('Pending', 'Error'));
    END;
GO
/* The lease index: the claim finds the items in Processing whose lease expired
   (their worker died) or whose holder is the caller (it restarted). Only items
   in flight are in it: as many as there are workers times their batch. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Lease' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Lease
            ON dbo.SyncQueue (LeaseUntil)
            INCLUDE (LockedBy, AttemptNum, GroupKey)
            WHERE ([Status] = 'Processing');
    END;
GO
/* The group index: an item of an ordered group may be claimed only when no
   unfinished item of its group was enqueued before it. The filter lists the
   unfinished states (dbo.QueueIsFinished_fn = 0) literally, as the claim does. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Group' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Group
            ON dbo.SyncQueue (GroupKey, EnqueuedAt)
            WHERE (GroupKey IS NOT NULL AND [Status] IN ('Pending', 'Processing', 'Error', 'Paused'));
    END;
GO
/* Deduplication: at most one unfinished item per DedupKey. Add_ returns the
   existing item instead of inserting (under its enqueue lock); this index is
   the guarantee behind it. A finished item leaves the index, so the key can
   be enqueued again. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_DedupKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE UNIQUE NONCLUSTERED INDEX IX_SyncQueue_DedupKey
            ON dbo.SyncQueue (DedupKey)
            WHERE (DedupKey IS NOT NULL AND [Status] IN ('Pending', 'Processing', 'Error', 'Paused'));
    END;
GO
/* The health index: dbo.QueueHealth_V counts the unfinished items of each
   status, and finds the oldest due and those past their lease, from this narrow
   index instead of the table's wide rows. Finished items are not in it, so its
   reads do not grow with the history a queue keeps until it is purged.
   Databases deployed before get the filter from V0006. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Status' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Status
            ON dbo.SyncQueue ([Status])
            INCLUDE (ScheduledFor, LeaseUntil, UpdatedAt)
            WHERE ([Status] IN ('Pending', 'Processing', 'Error', 'Paused'));
    END;
GO
/* The purge index: Purge_SyncQueue_trx takes the finished items that finished
   first, in this order, and stops at its batch: a seek, whatever the table holds. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Finished' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Finished
            ON dbo.SyncQueue (UpdatedAt)
            WHERE ([Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted'));
    END;
GO

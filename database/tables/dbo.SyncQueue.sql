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
            BatchID INT NULL,
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
/* BatchID: the batch (dbo.QueueBatch) the item was enqueued into, NULL for none. Its
   final report counts it in the batch (dbo.Count_QueueBatch_utx). No index: nothing
   looks items up by batch; the batch's row keeps its counts.
   Databases deployed before get the column from V0020. */
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
   in flight are in it: as many as there are workers times their batch. [Type] is
   included so that a claim of a limited type counts that type's items in flight
   from this index alone (dbo.Next_SyncQueue_utx, dbo.QueueControl_V).
   Databases deployed before get [Type] from V0018. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Lease' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Lease
            ON dbo.SyncQueue (LeaseUntil)
            INCLUDE (LockedBy, AttemptNum, GroupKey, [Type])
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
/* The search indexes: the dashboard finds a queue's items by a business key, of
   every state, newest first (dbo.Worker_SyncQueue_V, docs/dashboard.md). A page is
   one seek, the key equal and EnqueuedAt past the last one shown, that stops
   after its rows, however much history the queue keeps. This one: the items of
   an entity. Write cost: one entry of at most about 420 bytes per item, written
   by its Add_ and removed by its purge; EntityKey and EnqueuedAt never change,
   so a claim, a report or a control writes nothing to it.
   Databases deployed before get it from V0009. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_SearchEntityKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchEntityKey
            ON dbo.SyncQueue (EntityKey, EnqueuedAt);
    END;
GO
/* The DedupKey search: the items that carried a DedupKey, of every state, by
   key. IX_SyncQueue_DedupKey cannot serve it: it holds the unfinished items
   only, which the enqueue's deduplication depends on. Filtered to the items
   that have one; the dashboard states the filter literally, as the optimizer
   uses a filtered index only for a predicate it can prove is a subset ("Create
   filtered indexes",
   https://learn.microsoft.com/sql/relational-databases/indexes/create-filtered-indexes).
   Write cost: one entry of at most about 420 bytes per item with a DedupKey,
   written by its Add_ and removed by its purge; neither key changes, so a
   claim, a report or a control writes nothing to it.
   Databases deployed before get it from V0010. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_SearchDedupKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchDedupKey
            ON dbo.SyncQueue (DedupKey, EnqueuedAt)
            WHERE (DedupKey IS NOT NULL);
    END;
GO
/* The GroupKey search: a group's items, of every state, by key.
   IX_SyncQueue_Group cannot serve it: it holds the unfinished items only, which
   the claim's group check depends on. Filtered and stated as the DedupKey
   search is. Write cost: one entry of at most about 220 bytes per item with a
   GroupKey, written by its Add_ and removed by its purge; nothing else writes to
   it.
   Databases deployed before get it from V0011. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_SearchGroupKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchGroupKey
            ON dbo.SyncQueue (GroupKey, EnqueuedAt)
            WHERE (GroupKey IS NOT NULL);
    END;
GO
/* The finished lists: the items of one finished state, the most recently
   updated (for a Failed item: when it failed) first, and pages of them by
   (UpdatedAt, EnqueuedAt), each one seek that stops after its rows however
   many items finished; [Type] is included, so that a list of one type tests it
   here, not in the table. IX_SyncQueue_Finished cannot serve it (its order
   mixes the states, so a list of rare Failed items among many Completed ones
   would read them all), nor can it change: Purge_SyncQueue_trx reads it in
   order across the states. The filter lists the finished states
   (dbo.QueueIsFinished_fn = 1) literally, as the dashboard's lists do. Write
   cost: one entry of at most about 100 bytes per finished item, written when it
   finishes (the statement that writes IX_SyncQueue_Finished) and removed when a
   Retry takes it back or a purge removes it; what happens to an item before it
   finishes (its enqueue, claims, leases, reports of an Error) writes nothing
   to it.
   Databases deployed before get it from V0012. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_FinishedByStatus' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_FinishedByStatus
            ON dbo.SyncQueue ([Status], UpdatedAt, EnqueuedAt)
            INCLUDE ([Type])
            WHERE ([Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted'));
    END;
GO

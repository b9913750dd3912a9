SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueAttempt: the history of dbo.SyncQueue, one row per claim, written in the
   transaction of the claim (Next_SyncQueue_utx) and completed in the transaction of
   the report that ends it (Modify_SyncQueue_utx, or a control such as Cancel_).
   StartedAt is the claim's token: tokens only move forward, so it tells the
   attempts of an item apart even when a retry by hand starts AttemptNum again.
   Outcome is NULL while the attempt runs. An attempt whose worker vanished is
   ended by the claim that takes the item over (Outcome Error, Error saying so)
   or, on the last attempt, as Failed; its Duration stays NULL: nobody knows when
   the work stopped. Deleting an item deletes its history (ON DELETE CASCADE), so
   archiving finished items is one DELETE. */
IF OBJECT_ID(N'dbo.SyncQueueAttempt', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.SyncQueueAttempt (
            EnqueuedAt dbo.[_Timestamp],
            StartedAt dbo.[_Timestamp],
            AttemptNum dbo.AttemptNum,
            [Step] dbo.QueueStep NULL,
            LockedBy dbo.WorkerName,
            Outcome dbo.QueueState NULL,
            Duration dbo.Duration NULL,
            Response dbo.WebResponse CONSTRAINT DF_SyncQueueAttempt_Response DEFAULT (N''),
            Error dbo.WebResponse CONSTRAINT DF_SyncQueueAttempt_Error DEFAULT (N''),
            CONSTRAINT PK_SyncQueueAttempt PRIMARY KEY CLUSTERED (EnqueuedAt, StartedAt),
            CONSTRAINT SyncQueueAttempt_IsAttemptOf_SyncQueue FOREIGN KEY (EnqueuedAt)
            REFERENCES dbo.SyncQueue (EnqueuedAt) ON DELETE CASCADE,
            CONSTRAINT SyncQueueAttempt_IsStatedBy_QueueStatus FOREIGN KEY (Outcome)
            REFERENCES dbo.QueueStatus ([Status])
        );
    END;
GO
/* The open attempts: a report finds the one it ends, a takeover the one it abandons. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueueAttempt_Open' AND object_id = OBJECT_ID(N'dbo.SyncQueueAttempt')
    )
    BEGIN
        CREATE UNIQUE NONCLUSTERED INDEX IX_SyncQueueAttempt_Open
            ON dbo.SyncQueueAttempt (EnqueuedAt)
            WHERE (Outcome IS NULL);
    END;
GO
/* Recent attempts, for dbo.QueueThroughput_V: outcomes and durations of a window. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueueAttempt_Started' AND object_id = OBJECT_ID(N'dbo.SyncQueueAttempt')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueueAttempt_Started
            ON dbo.SyncQueueAttempt (StartedAt)
            INCLUDE (Outcome, Duration);
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.NotificationAttempt: the history of dbo.Notification, one row per claim, written in the
   transaction of the claim (Next_Notification_utx) and completed in the transaction of
   the report that ends it (Modify_Notification_utx, or a control such as Cancel_).
   StartedAt is the claim's token: tokens only move forward, so it tells the
   attempts of an item apart even when a retry by hand starts AttemptNum again.
   Outcome is NULL while the attempt runs. An attempt whose worker vanished is
   ended by the claim that takes the item over (Outcome Error, Error saying so)
   or, on the last attempt, as Failed; its Duration stays NULL: nobody knows when
   the work stopped. Deleting an item deletes its history (ON DELETE CASCADE), so
   archiving finished items is one DELETE. */
IF OBJECT_ID(N'dbo.NotificationAttempt', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.NotificationAttempt (
            EnqueuedAt dbo.[_Timestamp],
            StartedAt dbo.[_Timestamp],
            AttemptNum dbo.AttemptNum,
            [Step] dbo.QueueStep NULL,
            LockedBy dbo.WorkerName,
            Outcome dbo.QueueState NULL,
            Duration dbo.Duration NULL,
            Response dbo.WebResponse CONSTRAINT DF_NotificationAttempt_Response DEFAULT (N''),
            Error dbo.WebResponse CONSTRAINT DF_NotificationAttempt_Error DEFAULT (N''),
            CONSTRAINT PK_NotificationAttempt PRIMARY KEY CLUSTERED (EnqueuedAt, StartedAt),
            CONSTRAINT NotificationAttempt_IsAttemptOf_Notification FOREIGN KEY (EnqueuedAt)
            REFERENCES dbo.Notification (EnqueuedAt) ON DELETE CASCADE,
            CONSTRAINT NotificationAttempt_IsStatedBy_QueueStatus FOREIGN KEY (Outcome)
            REFERENCES dbo.QueueStatus ([Status])
        );
    END;
GO
/* The open attempts: a report finds the one it ends, a takeover the one it abandons. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_NotificationAttempt_Open' AND object_id = OBJECT_ID(N'dbo.NotificationAttempt')
    )
    BEGIN
        CREATE UNIQUE NONCLUSTERED INDEX IX_NotificationAttempt_Open
            ON dbo.NotificationAttempt (EnqueuedAt)
            WHERE (Outcome IS NULL);
    END;
GO
/* Recent attempts, for dbo.QueueThroughput_V: outcomes and durations of a window. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_NotificationAttempt_Started' AND object_id = OBJECT_ID(N'dbo.NotificationAttempt')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_NotificationAttempt_Started
            ON dbo.NotificationAttempt (StartedAt)
            INCLUDE (Outcome, Duration);
    END;
GO

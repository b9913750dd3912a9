SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueue: one queue serving several job types (dbo.SyncQueueType),
   all sharing the lifecycle columns of seed 000: which entity to sync, with an
   optional JSON payload. Keys and tokens as in dbo.Notification: UTC, handed
   out under an application lock on 'dbo.SyncQueue' so they never collide. */
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
/* The claim index of Next_SyncQueue_utx: see dbo.Notification. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Due' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_SyncQueue_Due
            ON dbo.SyncQueue (ScheduledFor)
            INCLUDE (AttemptNum)
            WHERE ([Status] IN ('Pending', 'Error'));
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueOutcomeList: many reports in one call
   (dbo.Modify_SyncQueue_Batch_trx), one row per item, with the meaning of
   dbo.Modify_SyncQueue_utx's parameters of the same names.
   A table type cannot name its constraints, so its key is unnamed. */
IF TYPE_ID(N'dbo.SyncQueueOutcomeList') IS NULL
    BEGIN
        CREATE TYPE dbo.SyncQueueOutcomeList AS TABLE (
            EnqueuedAt DATETIME2(7) NOT NULL,
            UpdatedAt DATETIME2(7) NULL,
            [Status] dbo.QueueState NULL,
            [Step] VARCHAR(400) NULL,
            Response NVARCHAR(MAX) NULL,
            Error NVARCHAR(MAX) NULL,
            ScheduledFor DATETIME2(7) NULL,
            PRIMARY KEY (EnqueuedAt)
        );
    END;
GO

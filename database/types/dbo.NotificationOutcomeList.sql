SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.NotificationOutcomeList: many reports in one call
   (dbo.Modify_Notification_Batch_trx), one row per item, with the meaning of
   dbo.Modify_Notification_utx's parameters of the same names. The channel
   results (e-mail, SMS) are reported one item at a time with Modify_.
   A table type cannot name its constraints, so its key is unnamed. */
IF TYPE_ID(N'dbo.NotificationOutcomeList') IS NULL
    BEGIN
        CREATE TYPE dbo.NotificationOutcomeList AS TABLE (
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

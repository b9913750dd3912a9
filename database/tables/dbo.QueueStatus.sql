SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueStatus: the lifecycle states every queue shares (seed 000).
   Pending -> Processing -> Completed | Error | Failed; Error is retried,
   Failed is terminal (the retry budget is spent). The rows are reference
   data: database/data/dbo.QueueStatus.sql. */
IF OBJECT_ID(N'dbo.QueueStatus', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.QueueStatus (
            [Status] dbo.QueueState,
            CONSTRAINT PK_QueueStatus PRIMARY KEY CLUSTERED ([Status])
        );
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueType: the job types one SyncQueue serves. */
IF OBJECT_ID(N'dbo.SyncQueueType', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.SyncQueueType (
            [Type] dbo.[_Type],
            CONSTRAINT PK_SyncQueueType PRIMARY KEY CLUSTERED ([Type])
        );
    END;
GO

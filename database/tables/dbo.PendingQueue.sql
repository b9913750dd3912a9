SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.PendingQueue: a pending queue (seed 004): each message carries a due time
   (UTC), and only due messages are received, earliest first. Clustered on
   (DueAt, Id) so that a receive seeks to the due end. */
IF OBJECT_ID(N'dbo.PendingQueue', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.PendingQueue (
            DueAt dbo.[_Timestamp],
            Id BIGINT IDENTITY (1, 1) NOT NULL,
            Payload dbo.MessageBody,
            EnqueuedAt dbo.[_Timestamp] CONSTRAINT DF_PendingQueue_EnqueuedAt DEFAULT (SYSUTCDATETIME()),
            CONSTRAINT PK_PendingQueue PRIMARY KEY CLUSTERED (DueAt, Id)
        );
    END;
GO

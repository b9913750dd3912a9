SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.LifoStack: a LIFO stack (seed 004): the newest message is received first.
   Sends and receives work on the same end of the clustered index, so the last
   page is a hot spot of page latches: stacks scale worse than queues, where
   sends and receives work at opposite ends. */
IF OBJECT_ID(N'dbo.LifoStack', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.LifoStack (
            Id BIGINT IDENTITY (1, 1) NOT NULL,
            Payload dbo.MessageBody,
            EnqueuedAt dbo.[_Timestamp] CONSTRAINT DF_LifoStack_EnqueuedAt DEFAULT (SYSUTCDATETIME()),
            CONSTRAINT PK_LifoStack PRIMARY KEY CLUSTERED (Id)
        );
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.HeapQueue: a heap queue (seed 004): a row is a message, and receiving it
   deletes it. No index, no order: consumers take whichever unlocked rows the
   scan meets first, so they never wait on each other and never queue up on
   one page. EnqueuedAt is for monitoring only. */
IF OBJECT_ID(N'dbo.HeapQueue', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.HeapQueue (
            Payload dbo.MessageBody,
            EnqueuedAt dbo.[_Timestamp] CONSTRAINT DF_HeapQueue_EnqueuedAt DEFAULT (SYSUTCDATETIME())
        );
    END;
GO

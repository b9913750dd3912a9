SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.FifoQueue: a FIFO queue (seed 004), clustered on an ever-increasing Id and
   received oldest first. Receives use READPAST, so consumers skip each other's
   rows: order is kept loosely (a rolled-back receive puts an older message back
   behind newer ones already taken). For strict order see dbo.StrictFifoQueue. */
IF OBJECT_ID(N'dbo.FifoQueue', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.FifoQueue (
            Id BIGINT IDENTITY (1, 1) NOT NULL,
            Payload dbo.MessageBody,
            EnqueuedAt dbo.[_Timestamp] CONSTRAINT DF_FifoQueue_EnqueuedAt DEFAULT (SYSUTCDATETIME()),
            CONSTRAINT PK_FifoQueue PRIMARY KEY CLUSTERED (Id)
        );
    END;
GO

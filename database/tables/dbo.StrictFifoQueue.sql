SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.StrictFifoQueue: a FIFO queue that keeps strict order (seed 004). Its receive
   has no READPAST: a second consumer waits until the first commits or rolls
   back, because if T1 took message A and T2 the next one, B, and then T1
   rolled back while T2 committed, B would have been processed before A. Strict
   order and concurrent consumers exclude each other; this table chooses order. */
IF OBJECT_ID(N'dbo.StrictFifoQueue', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.StrictFifoQueue (
            Id BIGINT IDENTITY (1, 1) NOT NULL,
            Payload dbo.MessageBody,
            EnqueuedAt dbo.[_Timestamp] CONSTRAINT DF_StrictFifoQueue_EnqueuedAt DEFAULT (SYSUTCDATETIME()),
            CONSTRAINT PK_StrictFifoQueue PRIMARY KEY CLUSTERED (Id)
        );
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DeadLetter: messages that consumers failed on '<kind>.maxDeliveries' times
   (dbo.AppSettingInt_fn, default 5), moved out of their queue by dbo.Fail_<Kind>_trx so
   that they stop coming back: what the message was, how often it was delivered and why
   the last delivery failed. An operator reads them through dbo.DeadLetter_V, sends one
   back to its queue with dbo.Replay_DeadLetter_trx or drops it with
   dbo.Delete_DeadLetter_trx; nothing else removes a row.
   DeadLetterId: the key, an identity: never reused, so it is also the token that keeps two
     operators from replaying one letter twice (the second finds it gone: 735716).
   Kind: the queue it came from (dbo.MessageKind). Queue: the transport queue's address;
     NULL for the other kinds.
   MessageKey: its key in its table: Id, or the transport's RowVersion.
   MessageId, CorrelationId, ReplyToAddress, Recoverable, Expires, Headers: the transport
     message's own columns; NULL for the other kinds.
   DueAt: a pending message's due time; NULL for the other kinds.
   Payload: the message's bytes (for the transport its Body, which may be NULL).
   EnqueuedAt: when it was sent; NULL for the transport, which does not record it.
   DeliveryCount: the deliveries recorded, every one failed. Error: the last failure's
     reason. FirstFailedAt, DeadLetteredAt: the first failure and the move (UTC).
   No foreign key, so that a transport queue can be dropped with letters left; a replay to
   a queue that no longer exists is refused by dbo.Send_TransportMessage_utx (735707). */
IF OBJECT_ID(N'dbo.DeadLetter', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.DeadLetter (
            DeadLetterId BIGINT IDENTITY (1, 1) NOT NULL,
            Kind dbo.MessageKind,
            Queue VARCHAR(255) NULL,
            MessageKey BIGINT NOT NULL,
            MessageId UNIQUEIDENTIFIER NULL,
            CorrelationId VARCHAR(255) NULL,
            ReplyToAddress VARCHAR(255) NULL,
            Recoverable BIT NULL,
            Expires DATETIME2(7) NULL,
            Headers NVARCHAR(MAX) NULL,
            DueAt DATETIME2(7) NULL,
            Payload VARBINARY(MAX) NULL,
            EnqueuedAt DATETIME2(7) NULL,
            DeliveryCount INT NOT NULL,
            Error dbo.WebResponse,
            FirstFailedAt dbo.[_Timestamp],
            DeadLetteredAt dbo.[_Timestamp] CONSTRAINT DF_DeadLetter_DeadLetteredAt DEFAULT (SYSUTCDATETIME()),
            CONSTRAINT PK_DeadLetter PRIMARY KEY CLUSTERED (DeadLetterId),
            CONSTRAINT DeadLetter_IsOf_MessageKind CHECK (
                Kind IN ('FifoQueue', 'StrictFifoQueue', 'LifoStack', 'PendingQueue', 'TransportMessage')
            ),
            -- A transport letter has its queue and id; any other has its payload and none of them.
            CONSTRAINT DeadLetter_IsShapedAs_ItsKind CHECK (
                (Kind = 'TransportMessage' AND Queue IS NOT NULL AND MessageId IS NOT NULL AND Headers IS NOT NULL)
                OR (Kind <> 'TransportMessage' AND Queue IS NULL AND MessageId IS NULL AND Payload IS NOT NULL)
            ),
            CONSTRAINT DeadLetter_Counts_ADelivery CHECK (DeliveryCount >= 1)
        );
    END;
GO
/* The counts per queue (dbo.DeadLetterCount_V) read this narrow index, not the rows with
   their payloads. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_DeadLetter_Kind' AND object_id = OBJECT_ID(N'dbo.DeadLetter')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_DeadLetter_Kind
            ON dbo.DeadLetter (Kind, Queue)
            INCLUDE (DeadLetteredAt);
    END;
GO

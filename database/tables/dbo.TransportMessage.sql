SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.TransportMessage: the messages of the transport (seed 002), in their queues:
   ids, correlation, reply-to address, a recoverable flag, expiry, headers and
   body, and an identity row version that orders each queue. Clustered on
   (Queue, RowVersion), so a receive seeks to the oldest row of one queue.
   Expires is UTC (the seed's was local time); an expired message is never
   delivered and is purged by dbo.Purge_TransportMessage_trx. */
IF OBJECT_ID(N'dbo.TransportMessage', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.TransportMessage (
            Queue dbo.QueueAddress,
            [RowVersion] BIGINT IDENTITY (1, 1) NOT NULL,
            Id dbo.MessageId,
            CorrelationId VARCHAR(255) NULL,
            ReplyToAddress VARCHAR(255) NULL,
            Recoverable BIT NOT NULL CONSTRAINT DF_TransportMessage_Recoverable DEFAULT (1),
            Expires dbo.[_Timestamp] NULL,
            Headers dbo.JsonDoc CONSTRAINT DF_TransportMessage_Headers DEFAULT (N'{}'),
            Body VARBINARY(MAX) NULL,
            CONSTRAINT PK_TransportMessage PRIMARY KEY CLUSTERED (Queue, [RowVersion]),
            CONSTRAINT TransportMessage_IsIn_TransportQueue FOREIGN KEY (Queue)
            REFERENCES dbo.TransportQueue (Queue),
            CONSTRAINT TransportMessage_Carries_JsonHeaders CHECK (ISJSON(Headers) = 1)
        );
    END;
GO
/* The purge's index: expired messages are found by seeking, not by scanning
   every queue. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_TransportMessage_Expires' AND object_id = OBJECT_ID(N'dbo.TransportMessage')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_TransportMessage_Expires
            ON dbo.TransportMessage (Expires)
            WHERE (Expires IS NOT NULL);
    END;
GO

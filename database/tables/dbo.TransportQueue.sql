SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.TransportQueue: the queues of the transport (seed 002): one primary queue per
   endpoint, shared by all its instances, and optional per-instance secondary
   queues named <Endpoint>.<Machine> for replies that must reach the instance
   that asked. A queue is a row here, not a table of its own, so that declaring
   one needs no DDL. */
IF OBJECT_ID(N'dbo.TransportQueue', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.TransportQueue (
            Queue dbo.QueueAddress,
            Endpoint dbo.QueueAddress,
            Machine VARCHAR(255) NULL,
            CONSTRAINT PK_TransportQueue PRIMARY KEY CLUSTERED (Queue),
            CONSTRAINT TransportQueue_BelongsTo_PrimaryQueue FOREIGN KEY (Endpoint)
            REFERENCES dbo.TransportQueue (Queue),
            CONSTRAINT TransportQueue_IsNamedFor_EndpointAndMachine CHECK (
                (Machine IS NULL AND Queue = Endpoint)
                OR (Machine IS NOT NULL AND Queue = Endpoint + '.' + Machine)
            )
        );
    END;
GO

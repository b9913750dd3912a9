SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueAddress: The address of a transport queue: <Endpoint> for a primary queue,
   <Endpoint>.<Machine> for an instance's secondary queue (seed 002).
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.QueueAddress') IS NULL
    BEGIN
        CREATE TYPE dbo.QueueAddress FROM VARCHAR(255) NOT NULL;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.MessageId: The id of a transport message, chosen by its sender (seed 002).
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.MessageId') IS NULL
    BEGIN
        CREATE TYPE dbo.MessageId FROM UNIQUEIDENTIFIER NOT NULL;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.MessageBody: The body of a message in a message queue: bytes, for the application to decode.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.MessageBody') IS NULL
    BEGIN
        CREATE TYPE dbo.MessageBody FROM VARBINARY(MAX) NOT NULL;
    END;
GO

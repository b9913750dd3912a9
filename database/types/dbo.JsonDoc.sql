SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.JsonDoc: A JSON document; columns of this type carry a CHECK that it is valid JSON.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.JsonDoc') IS NULL
    BEGIN
        CREATE TYPE dbo.JsonDoc FROM NVARCHAR(MAX) NOT NULL;
    END;
GO

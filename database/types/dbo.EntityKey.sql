SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.EntityKey: The key of the entity a sync job is about (a customer number, an order id, ...).
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.EntityKey') IS NULL
    BEGIN
        CREATE TYPE dbo.EntityKey FROM NVARCHAR(200) NOT NULL;
    END;
GO

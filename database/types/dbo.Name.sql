SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Name: A person's or a worker's name, or a language code.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.Name') IS NULL
    BEGIN
        CREATE TYPE dbo.Name FROM NVARCHAR(128) NOT NULL;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.WebResponse: A response or error body from an external call (SMTP, API, webhook).
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.WebResponse') IS NULL
    BEGIN
        CREATE TYPE dbo.WebResponse FROM NVARCHAR(MAX) NOT NULL;
    END;
GO

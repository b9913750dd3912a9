SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DbUsername: The login name of an application user.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.DbUsername') IS NULL
    BEGIN
        CREATE TYPE dbo.DbUsername FROM NVARCHAR(128) NOT NULL;
    END;
GO

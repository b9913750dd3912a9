SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DbUserID: The id of an application user.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.DbUserID') IS NULL
    BEGIN
        CREATE TYPE dbo.DbUserID FROM INT NOT NULL;
    END;
GO

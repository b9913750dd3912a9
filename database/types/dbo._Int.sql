SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.[_Int]: A whole number setting or count.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo._Int') IS NULL
    BEGIN
        CREATE TYPE dbo.[_Int] FROM INT NOT NULL;
    END;
GO

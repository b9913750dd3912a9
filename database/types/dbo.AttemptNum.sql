SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.AttemptNum: How many times a work item has been claimed for processing.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.AttemptNum') IS NULL
    BEGIN
        CREATE TYPE dbo.AttemptNum FROM SMALLINT NOT NULL;
    END;
GO

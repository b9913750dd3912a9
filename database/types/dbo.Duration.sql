SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Duration: Elapsed milliseconds. BIGINT, because an INT of milliseconds overflows
   after 24.8 days and a stuck item can take longer than that.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.Duration') IS NULL
    BEGIN
        CREATE TYPE dbo.Duration FROM BIGINT NOT NULL;
    END;
GO

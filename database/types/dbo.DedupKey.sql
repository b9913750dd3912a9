SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.DedupKey: An enqueue's deduplication key: while an unfinished item carries it,
   enqueueing it again returns that item instead of adding a second one.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.DedupKey') IS NULL
    BEGIN
        CREATE TYPE dbo.DedupKey FROM NVARCHAR(200) NOT NULL;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.GroupKey: An ordered group: items with the same key are processed one at a time,
   in the order they were enqueued; different groups proceed in parallel.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.GroupKey') IS NULL
    BEGIN
        CREATE TYPE dbo.GroupKey FROM NVARCHAR(100) NOT NULL;
    END;
GO

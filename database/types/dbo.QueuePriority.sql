SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueuePriority: How urgent an item is: higher is claimed first, then the earliest due.
   0 is the default; negative values mean "after everything else".
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.QueuePriority') IS NULL
    BEGIN
        CREATE TYPE dbo.QueuePriority FROM SMALLINT NOT NULL;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueState: A work item's lifecycle state, one of the rows of dbo.QueueStatus.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.QueueState') IS NULL
    BEGIN
        CREATE TYPE dbo.QueueState FROM VARCHAR(20) NOT NULL;
    END;
GO

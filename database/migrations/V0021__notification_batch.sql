SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0021__notification_batch: BatchID on dbo.Notification and dbo.NotificationArchive, as their table files now
   create them: the batch (dbo.QueueBatch) an item was enqueued into, NULL for none.
   Adding a column that allows NULLs and has no default changes the table's metadata
   only: no row is read or written, however many the table holds, and the schema
   modification lock it takes lasts only as long as that change ("Locks and ALTER
   TABLE", https://learn.microsoft.com/sql/t-sql/statements/alter-table-transact-sql).
   No index. Guarded: on a new database, where the table files already have the
   column, it changes nothing. */
IF COL_LENGTH(N'dbo.Notification', N'BatchID') IS NULL
    BEGIN
        ALTER TABLE dbo.Notification ADD BatchID INT NULL;
    END;
GO
IF COL_LENGTH(N'dbo.NotificationArchive', N'BatchID') IS NULL
    BEGIN
        ALTER TABLE dbo.NotificationArchive ADD BatchID INT NULL;
    END;
GO

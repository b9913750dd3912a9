SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0006__syncqueue_status_unfinished: IX_SyncQueue_Status holds the unfinished
   items only (WHERE [Status] IN ('Pending', 'Processing', 'Error', 'Paused')), as
   dbo.SyncQueue.sql now creates it. dbo.QueueHealth_V counts the unfinished states from
   it; with the finished items in it, an index read of the health view could grow
   with the history the queue keeps until it is purged. CREATE INDEX ... WITH
   (DROP_EXISTING = ON) adds the filter in one statement, the old index in use
   until the new one is built ("DROP_EXISTING",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql).
   The build reads every item once (the old index holds the columns it needs) and
   writes the unfinished ones. Online where the deploy says the edition has online
   index operations (docs/operations.md, "Index builds"); in a file of its own
   because the build's last lock lasts until the file commits. Guarded: where the
   index is filtered already (a new database) it changes nothing. */
IF
    EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Status' AND object_id = OBJECT_ID(N'dbo.SyncQueue') AND has_filter = 0
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_Status
                    ON dbo.SyncQueue ([Status])
                    INCLUDE (ScheduledFor, LeaseUntil, UpdatedAt)
                    WHERE ([Status] IN ('Pending', 'Processing', 'Error', 'Paused'))
                    WITH (DROP_EXISTING = ON, ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_Status
                    ON dbo.SyncQueue ([Status])
                    INCLUDE (ScheduledFor, LeaseUntil, UpdatedAt)
                    WHERE ([Status] IN ('Pending', 'Processing', 'Error', 'Paused'))
                    WITH (DROP_EXISTING = ON);
            END;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0011__syncqueue_search_groupkey: IX_SyncQueue_SearchGroupKey, as dbo.SyncQueue.sql
   now creates it (its comment gives its purpose and write cost): the dashboard finds a
   group's items of every state, newest first, one seek a page. The claim's, the
   enqueue's, the health view's and the purge's indexes do not change. The build reads
   the whole table once and writes the items it holds. Online where the deploy says the
   edition has online index operations (docs/operations.md, "Index builds"; "ONLINE",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql); in a
   file of its own because the build's last lock lasts until the file commits. Guarded:
   on a new database it changes nothing. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_SearchGroupKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchGroupKey
                    ON dbo.SyncQueue (GroupKey, EnqueuedAt)
                    WHERE (GroupKey IS NOT NULL)
                    WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchGroupKey
                    ON dbo.SyncQueue (GroupKey, EnqueuedAt)
                    WHERE (GroupKey IS NOT NULL);
            END;
    END;
GO

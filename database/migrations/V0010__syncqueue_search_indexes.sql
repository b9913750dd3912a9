SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0010__syncqueue_search_indexes: the indexes behind the dashboard's item lists,
   as dbo.SyncQueue.sql now creates them (its comments give each one's purpose and
   write cost): IX_SyncQueue_SearchEntityKey, IX_SyncQueue_SearchDedupKey and
   IX_SyncQueue_SearchGroupKey find an entity's, a DedupKey's or a group's items of
   every state, newest first, one seek a page; IX_SyncQueue_FinishedByStatus lists
   one finished state's items, the most recently updated first, one seek a page.
   The indexes the claim, the enqueue, the health view and the purge read do not
   change. Each build reads the whole table once and writes the items it holds.
   Online where the deploy says the edition has online index operations
   (docs/operations.md, "Index builds"; "ONLINE",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql).
   The four builds share this file, and so its transaction: an online build's last
   shared lock lasts until the file commits ("How online index operations work",
   https://learn.microsoft.com/sql/relational-databases/indexes/how-online-index-operations-work),
   so from the end of the first build enqueues, claims and reports on dbo.SyncQueue
   wait for the builds after it. On a large queue, deploy when it is quiet, or run
   each guarded statement below on its own beforehand, outside a transaction: the
   deploy then skips the indexes that exist. Guarded one by one: on a new database
   it changes nothing. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_SearchEntityKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchEntityKey
                    ON dbo.SyncQueue (EntityKey, EnqueuedAt)
                    WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchEntityKey
                    ON dbo.SyncQueue (EntityKey, EnqueuedAt);
            END;
    END;
GO
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_SearchDedupKey' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchDedupKey
                    ON dbo.SyncQueue (DedupKey, EnqueuedAt)
                    WHERE (DedupKey IS NOT NULL)
                    WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_SearchDedupKey
                    ON dbo.SyncQueue (DedupKey, EnqueuedAt)
                    WHERE (DedupKey IS NOT NULL);
            END;
    END;
GO
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
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_FinishedByStatus' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_FinishedByStatus
                    ON dbo.SyncQueue ([Status], UpdatedAt, EnqueuedAt)
                    INCLUDE ([Type])
                    WHERE ([Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted'))
                    WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_FinishedByStatus
                    ON dbo.SyncQueue ([Status], UpdatedAt, EnqueuedAt)
                    INCLUDE ([Type])
                    WHERE ([Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted'));
            END;
    END;
GO

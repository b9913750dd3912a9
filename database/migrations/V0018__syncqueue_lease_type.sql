SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0018__syncqueue_lease_type: IX_SyncQueue_Lease includes [Type], as dbo.SyncQueue.sql now creates
   it: a claim of a job type that has a concurrency limit (dbo.QueueControl) counts that
   type's items in Processing under a live lease while it holds the type's lock, and with
   [Type] in the index it reads them from this index alone, without a lookup of each row;
   dbo.QueueControl_V counts them so too. Key and filter do not change, so the claim's
   and the stuck page's reads of it do not either. CREATE INDEX ... WITH
   (DROP_EXISTING = ON) changes it in one statement, the old index in use until the new
   one is built ("DROP_EXISTING",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql); the build
   reads the old index (the items in flight) and the rows for their type. Online where
   the deploy says the edition has online index operations (docs/operations.md, "Index
   builds"); in a file of its own because the build's last lock lasts until the file
   commits. Guarded: where the index includes [Type] already (a new database) it changes
   nothing. */
IF
    EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Lease' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    AND NOT EXISTS (
        SELECT 1
        FROM sys.indexes AS i
        INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
        INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
        WHERE i.name = N'IX_SyncQueue_Lease' AND i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND c.name = N'Type'
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_Lease
                    ON dbo.SyncQueue (LeaseUntil)
                    INCLUDE (LockedBy, AttemptNum, GroupKey, [Type])
                    WHERE ([Status] = 'Processing')
                    WITH (DROP_EXISTING = ON, ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_Lease
                    ON dbo.SyncQueue (LeaseUntil)
                    INCLUDE (LockedBy, AttemptNum, GroupKey, [Type])
                    WHERE ([Status] = 'Processing')
                    WITH (DROP_EXISTING = ON);
            END;
    END;
GO

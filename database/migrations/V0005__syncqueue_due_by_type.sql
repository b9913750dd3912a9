SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0005__syncqueue_due_by_type: IX_SyncQueue_Due is keyed ([Type], [Priority] DESC,
   ScheduledFor) and includes [Status], as dbo.SyncQueue.sql now creates it, instead of
   ([Priority] DESC, ScheduledFor) with [Type] included. dbo.Next_SyncQueue_utx reads
   it in (Type, Priority) bands, one seek each with ScheduledFor <= now in the
   seek's range, so a claim no longer reads the items scheduled for later that
   sort before the due ones, nor other types' items (the table file's comment
   has the whole shape). CREATE INDEX ... WITH (DROP_EXISTING = ON) changes the
   keys in one statement, the old index in use until the new one is built
   ("DROP_EXISTING",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql).
   The index holds the Pending and Error items only, so the build writes no more
   than the waiting work, but it reads the whole table: the old index does not
   carry [Status], so it cannot be the build's source. Online where the deploy says the edition has online
   index operations (docs/operations.md, "Index builds"); in a file of its own
   because the build's last lock lasts until the file commits. Guarded: where
   the index leads with [Type] already (a new database) it changes nothing.
   Its predecessor V0001__worker_lifecycle.sql created the index. */
IF
    EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_SyncQueue_Due' AND object_id = OBJECT_ID(N'dbo.SyncQueue')
    )
    AND NOT EXISTS (
        SELECT 1
        FROM sys.indexes AS i
        INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
        INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
        WHERE
            i.name = N'IX_SyncQueue_Due' AND i.object_id = OBJECT_ID(N'dbo.SyncQueue')
            AND ic.key_ordinal = 1 AND c.name = N'Type'
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_Due
                    ON dbo.SyncQueue ([Type], [Priority] DESC, ScheduledFor)
                    INCLUDE (AttemptNum, GroupKey, [Status])
                    WHERE ([Status] IN ('Pending', 'Error'))
                    WITH (DROP_EXISTING = ON, ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_SyncQueue_Due
                    ON dbo.SyncQueue ([Type], [Priority] DESC, ScheduledFor)
                    INCLUDE (AttemptNum, GroupKey, [Status])
                    WHERE ([Status] IN ('Pending', 'Error'))
                    WITH (DROP_EXISTING = ON);
            END;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0015__notification_finished_by_status: IX_Notification_FinishedByStatus, as
   dbo.Notification.sql now creates it (its comment gives its purpose and write cost):
   the dashboard lists one finished state's items, the most recently updated first, one
   seek a page. The claim's, the enqueue's, the health view's and the purge's indexes
   do not change. The build reads the whole table once and writes the items it holds.
   Online where the deploy says the edition has online index operations
   (docs/operations.md, "Index builds"; "ONLINE",
   https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql); in a
   file of its own because the build's last lock lasts until the file commits. Guarded:
   on a new database it changes nothing. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_Notification_FinishedByStatus' AND object_id = OBJECT_ID(N'dbo.Notification')
    )
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_Notification_FinishedByStatus
                    ON dbo.Notification ([Status], UpdatedAt, EnqueuedAt)
                    INCLUDE ([Type])
                    WHERE ([Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted'))
                    WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_Notification_FinishedByStatus
                    ON dbo.Notification ([Status], UpdatedAt, EnqueuedAt)
                    INCLUDE ([Type])
                    WHERE ([Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted'));
            END;
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* V0002__notification_due_index_type: dbo.Next_Notification_utx comes from the
   same template as every queue's claim now, and takes @Type: the claim index
   carries [Type] among its included columns, as IX_SyncQueue_Due does, so that a
   claim of one type reads its candidates from the index alone. CREATE INDEX ...
   WITH (DROP_EXISTING = ON) changes the included columns in one statement, with
   the old index in use until the new one is built. Guarded: on a database whose
   index has [Type] already (a new one: dbo.Notification.sql creates it so) it
   changes nothing. */
IF
    EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_Notification_Due' AND object_id = OBJECT_ID(N'dbo.Notification')
    )
    AND NOT EXISTS (
        SELECT 1
        FROM sys.indexes AS i
        INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
        INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
        WHERE i.name = N'IX_Notification_Due' AND i.object_id = OBJECT_ID(N'dbo.Notification') AND c.name = N'Type'
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_Notification_Due
            ON dbo.Notification ([Priority] DESC, ScheduledFor)
            INCLUDE (AttemptNum, GroupKey, [Type])
            WHERE ([Status] IN ('Pending', 'Error'))
            WITH (DROP_EXISTING = ON);
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueItemList: sync jobs to enqueue in one call (dbo.Add_SyncQueue_trx).
   ItemNo numbers the items; keys are handed out in ItemNo order and returned with it.
   Priority (NULL: 0), GroupKey and DedupKey are optional (see dbo.SyncQueue).
   A table type cannot name its constraints, so its key is unnamed. A table type
   cannot be altered either: V0001__worker_lifecycle.sql re-creates it. */
IF TYPE_ID(N'dbo.SyncQueueItemList') IS NULL
    BEGIN
        CREATE TYPE dbo.SyncQueueItemList AS TABLE (
            ItemNo INT NOT NULL,
            [Type] dbo.[_Type] NULL,
            EntityKey dbo.EntityKey NULL,
            Payload dbo.JsonDoc NULL,
            ScheduledFor dbo.[_Timestamp] NULL,
            [Priority] dbo.QueuePriority NULL,
            GroupKey dbo.GroupKey NULL,
            DedupKey dbo.DedupKey NULL,
            PRIMARY KEY (ItemNo)
        );
    END;
GO

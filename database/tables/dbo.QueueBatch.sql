SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueBatch: a set of items, of any queues, whose end enqueues one callback item.
   dbo.Open_QueueBatch_trx writes the row; the Add_ procedures enqueue items with its
   @BatchID (the item's BatchID column), counting them in Total while the batch is open;
   dbo.Seal_QueueBatch_trx closes it to new items. Every move of a batched item into a
   final state (Completed, PartiallyCompleted, Failed, Cancelled, Terminated: the states
   where dbo.QueueIsFinished_fn = 1) adds one to that state's count, in the transaction of
   the move (dbo.Count_QueueBatch_utx); a Retry (Failed -> Pending) takes one back from
   Failed. When a sealed batch has no item left to finish, the callback (CallbackType in the
   job queue CallbackQueue, on CallbackEntityKey, with CallbackPayload and the counts) is
   enqueued in that same transaction, once (dbo.Callback_QueueBatch_utx).
   BatchID: the key, an identity: never reused.
   [Name]: what the batch is, for people (the dashboard); NULL: none.
   CallbackQueue, CallbackType, CallbackEntityKey, CallbackPayload: the callback job;
     the payload is a JSON object, which the callback gets with "batch" added: the
     batch's key, name and counts when it fired.
   Total: the items enqueued with the batch (duplicates that joined an unfinished item
     of their DedupKey are not: that item is not the batch's).
   Completed, PartiallyCompleted, Failed, Cancelled, Terminated: its items now in each
     final state; Total minus their sum is what remains.
   OpenedAt, SealedAt (NULL: open), FinishedAt (when a sealed batch first had nothing
     left: the moment its callback was enqueued), CallbackEnqueuedAt (the callback
     item's key in CallbackQueue): UTC.
   No foreign key from the queues' BatchID: an item may outlive its batch row and the
   reverse (both are purged on their own), and a key check on every enqueue would read
   this table under a shared lock. */
IF OBJECT_ID(N'dbo.QueueBatch', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.QueueBatch (
            BatchID INT IDENTITY (1, 1) NOT NULL,
            [Name] NVARCHAR(200) NULL,
            CallbackQueue VARCHAR(128) NOT NULL,
            CallbackType dbo.[_Type],
            CallbackEntityKey dbo.EntityKey,
            CallbackPayload dbo.JsonDoc NULL,
            Total INT CONSTRAINT DF_QueueBatch_Total DEFAULT (0) NOT NULL,
            Completed INT CONSTRAINT DF_QueueBatch_Completed DEFAULT (0) NOT NULL,
            PartiallyCompleted INT CONSTRAINT DF_QueueBatch_PartiallyCompleted DEFAULT (0) NOT NULL,
            Failed INT CONSTRAINT DF_QueueBatch_Failed DEFAULT (0) NOT NULL,
            Cancelled INT CONSTRAINT DF_QueueBatch_Cancelled DEFAULT (0) NOT NULL,
            Terminated INT CONSTRAINT DF_QueueBatch_Terminated DEFAULT (0) NOT NULL,
            OpenedAt dbo.[_Timestamp] CONSTRAINT DF_QueueBatch_OpenedAt DEFAULT (SYSUTCDATETIME()),
            SealedAt dbo.[_Timestamp] NULL,
            FinishedAt dbo.[_Timestamp] NULL,
            CallbackEnqueuedAt dbo.[_Timestamp] NULL,
            CONSTRAINT PK_QueueBatch PRIMARY KEY CLUSTERED (BatchID),
            -- A count below zero, or more items finished than joined, is a bug: refused.
            CONSTRAINT QueueBatch_Counts_NoMoreThan_Total CHECK (
                Total >= 0 AND Completed >= 0 AND PartiallyCompleted >= 0 AND Failed >= 0
                AND Cancelled >= 0 AND Terminated >= 0
                AND Completed + PartiallyCompleted + Failed + Cancelled + Terminated <= Total
            ),
            CONSTRAINT QueueBatch_Finishes_AfterSealing CHECK (FinishedAt IS NULL OR SealedAt IS NOT NULL),
            CONSTRAINT QueueBatch_Carries_JsonObject CHECK (
                CallbackPayload IS NULL OR (ISJSON(CallbackPayload) = 1 AND LEFT(LTRIM(CallbackPayload), 1) = N'{')
            )
        );
    END;
GO
/* The running batches (no callback enqueued yet), newest first: what the dashboard's
   batches page lists before the finished ones. Only unfinished batches are in it, so its
   reads do not grow with the finished batches the table keeps. The dashboard states the
   filter literally, as the optimizer uses a filtered index only for a predicate it can
   prove is a subset ("Create filtered indexes",
   https://learn.microsoft.com/sql/relational-databases/indexes/create-filtered-indexes).
   Written twice per batch: at its opening, and when its callback is enqueued. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_QueueBatch_Running' AND object_id = OBJECT_ID(N'dbo.QueueBatch')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_QueueBatch_Running
            ON dbo.QueueBatch (BatchID)
            WHERE (CallbackEnqueuedAt IS NULL);
    END;
GO

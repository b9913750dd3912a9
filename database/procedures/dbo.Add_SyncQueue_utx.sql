SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_SyncQueue_utx: enqueues sync jobs, one per item of @Items, inside the
   caller's transaction, in one statement. Every item is checked first; one
   bad item and nothing is written.
   Keys: the first is the later of now and the last key plus a microsecond
   (dbo.QueueNextKey_fn), and the inserted item n (in ItemNo order, from 0)
   gets the first plus n microseconds, so a call's keys are contiguous,
   increasing, and never shared with another producer's. No lock is taken for
   them: the INSERT itself decides, and a producer that took the same keys in
   the same instant makes it fail and try again above the new last key (the
   body says how). So no lock outlives the call, even when its client cancels
   it (an attention, a command timeout) at any point, and a producer that keeps
   its transaction open after enqueueing holds up no other producer, except
   one enqueueing the same DedupKey or into the same ordered group (below). A
   later producer may commit a larger key first. An error of the INSERT other
   than a taken key is re-raised as it came (THROW): the caller rolls back.
   Ordered groups: an item with a GroupKey is enqueued under a lock of its group
   held to the end of the transaction (dbo.Lock_ItemKeys_utx), so a group's
   items are committed in key order and no claim waits for a producer's open
   transaction to learn whether an earlier item of a group exists.
   Deduplication: an item whose DedupKey an unfinished item (Pending,
   Processing, Error or Paused) already carries is not inserted and gets that
   item's key; items of one call sharing a DedupKey are inserted once, as the
   lowest ItemNo, and the others get its key. No error either way: enqueueing
   the same request twice is safe. The check runs under a lock per DedupKey
   held to the end of the transaction (dbo.Lock_ItemKeys_utx), so a producer
   waits for another's open transaction only when both enqueue the same
   DedupKey, and then sees its item. A call without DedupKeys reads nothing
   of the queue before its INSERT.
   @Items: the jobs: ItemNo, Type (a row of dbo.SyncQueueType), EntityKey,
     Payload (JSON or NULL), ScheduledFor (UTC; NULL: now), Priority (higher is
     claimed first, -32768 to 32767; NULL: 0), GroupKey (an ordered group, 1 to
     100 characters; NULL: none), DedupKey (1 to 200 characters; NULL: none).
     At most 4,000: a bigger insert would escalate to a table lock and stall
     every worker until the caller commits.
   @BatchID: the batch (dbo.Open_QueueBatch_trx) the inserted items join, counted in
     its Total; it must be open (735724 once sealed). A duplicate does not join: the
     unfinished item it shares is not the batch's. NULL (the default): none. With a
     batch, one lock does outlive the call: the batch's row, held to the end of the
     transaction (dbo.Join_QueueBatch_utx), so that batch's other producers and final
     reports wait for the caller's commit; no one else does.
   @FirstEnqueuedAt: OUTPUT, the key of the first inserted item; NULL when
     every item was a duplicate.
   @LastEnqueuedAt: OUTPUT, the key of the last inserted item; NULL likewise.
   @Enqueued: OUTPUT, every item as a JSON array of {ItemNo, EnqueuedAt,
     IsDuplicate} in ItemNo order, EnqueuedAt being the key it was inserted
     under or, for a duplicate, the key of the item that carries its DedupKey
     (read it with OPENJSON ... WITH (ItemNo INT, EnqueuedAt DATETIME2(7),
     IsDuplicate BIT)).
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735707 an invalid
   item (named by its ItemNo), 735709 a DedupKey's or group's lock was not
   granted in 10 s, or free keys were not found in 10 s (a lock on the table,
   such as a purge's, held every try up), 735723 no batch @BatchID, 735724 the
   batch is sealed; an error of the INSERT itself (a
   constraint, a deadlock) is re-raised as it came. On error the caller rolls
   back. */
CREATE OR ALTER PROCEDURE dbo.Add_SyncQueue_utx
    @Items dbo.SyncQueueItemList READONLY,
    @FirstEnqueuedAt dbo.[_Timestamp] = NULL OUTPUT,
    @LastEnqueuedAt dbo.[_Timestamp] = NULL OUTPUT,
    @Enqueued NVARCHAR(MAX) = NULL OUTPUT,
    @BatchID INT = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Add_SyncQueue_utx';
    -- A bigger INSERT would escalate to a table lock at 5,000 row locks and stall
    -- every worker until the caller commits: send more in several calls.
    DECLARE @MaxItems INT = 4000;
    DECLARE @ItemCount INT;
    DECLARE @InsertCount INT;
    DECLARE @BadItem INT;
    DECLARE @Why NVARCHAR(200);
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @XactAbort BIT;
    DECLARE @Deadline DATETIME2(7);
    DECLARE @Taken BIT;
    DECLARE @RetCode INT;
    DECLARE @ItemKeys dbo.ItemKeyList;
    -- KeepNo: the item of this call whose row an item shares (itself when inserted).
    DECLARE @Plan TABLE (
        ItemNo INT NOT NULL PRIMARY KEY,
        KeepNo INT NOT NULL,
        EnqueuedAt DATETIME2(7) NULL,
        IsDuplicate BIT NOT NULL
    );
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SELECT
        @FirstEnqueuedAt = NULL,
        @LastEnqueuedAt = NULL,
        @Enqueued = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Add_SyncQueue_utx');
            GOTO EXIT_ERROR;
        END;
    SELECT @ItemCount = COUNT(*) FROM @Items;
    IF (@ItemCount = 0 OR @ItemCount > @MaxItems)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Items must hold 1 to 4,000 items');
            GOTO EXIT_ERROR;
        END;
    -- Lengths and the Priority range are the list type's own: SQL Server refuses a
    -- longer value when the caller fills the list (8152), so only blanks are left.
    SELECT TOP (1)
        @BadItem = i.ItemNo,
        @Why = CASE
            WHEN i.[Type] IS NULL THEN N'Type is required'
            WHEN t.[Type] IS NULL THEN N'Type is not one of dbo.SyncQueueType'
            WHEN i.EntityKey IS NULL OR LTRIM(RTRIM(i.EntityKey)) = N'' THEN N'EntityKey is required'
            WHEN i.Payload IS NOT NULL AND ISJSON(i.Payload) = 0 THEN N'Payload is not valid JSON'
            WHEN LTRIM(RTRIM(i.GroupKey)) = N'' THEN N'GroupKey must not be blank: NULL for none'
            ELSE N'DedupKey must not be blank: NULL for none'
        END
    FROM @Items AS i
    LEFT JOIN dbo.SyncQueueType AS t ON i.[Type] = t.[Type]
    WHERE
        t.[Type] IS NULL
        OR i.EntityKey IS NULL
        OR LTRIM(RTRIM(i.EntityKey)) = N''
        OR (i.Payload IS NOT NULL AND ISJSON(i.Payload) = 0)
        OR LTRIM(RTRIM(i.GroupKey)) = N''
        OR LTRIM(RTRIM(i.DedupKey)) = N''
    ORDER BY i.ItemNo;
    IF (@BadItem IS NOT NULL)
        BEGIN
            SET @Why = N'item ' + CAST(@BadItem AS NVARCHAR(12)) + N': ' + @Why;
            RAISERROR (735707, 16, 1, @Proc, @Why);
            GOTO EXIT_ERROR;
        END;

    -- Each DedupKey and each ordered group of the call, locked to the end of the transaction
    -- (dbo.Lock_ItemKeys_utx): a DedupKey is checked by one transaction at a time, and a
    -- group's items are enqueued by one, so no later item of a group is committed before
    -- an earlier one.
    INSERT INTO @ItemKeys (KeyColumn, ItemKey)
    SELECT
        k.KeyColumn,
        k.ItemKey
    FROM @Items AS i
    CROSS APPLY (VALUES ('DedupKey', i.DedupKey), ('GroupKey', i.GroupKey)) AS k(KeyColumn, ItemKey)
    WHERE k.ItemKey IS NOT NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt > 0)
        BEGIN
            EXEC @RetCode = dbo.Lock_ItemKeys_utx
                @Queue = N'dbo.SyncQueue',
                @ItemKeys = @ItemKeys,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
        END;

    -- Under the DedupKeys' locks, so two producers of the same DedupKey cannot both miss it.
    -- Every item of a DedupKey finds the same holder, so a holder's key is all of theirs.
    IF
        NOT EXISTS (
            SELECT 1 FROM @ItemKeys AS k
            WHERE k.KeyColumn = 'DedupKey'
        )
        BEGIN
            -- No DedupKey: nothing to look for, and no read of the queue, where a scan
            -- could wait for another producer's uncommitted items.
            INSERT INTO @Plan (ItemNo, KeepNo, EnqueuedAt, IsDuplicate)
            SELECT
                i.ItemNo,
                i.ItemNo AS KeepNo,
                NULL AS EnqueuedAt,
                0 AS IsDuplicate
            FROM @Items AS i;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
        END;
    ELSE
        BEGIN
            INSERT INTO @Plan (ItemNo, KeepNo, EnqueuedAt, IsDuplicate)
            SELECT
                d.ItemNo,
                d.KeepNo,
                h.EnqueuedAt,
                CASE WHEN h.EnqueuedAt IS NOT NULL OR d.KeepNo <> d.ItemNo THEN 1 ELSE 0 END AS IsDuplicate
            FROM (
                SELECT
                    i.ItemNo,
                    i.DedupKey,
                    CASE
                        WHEN i.DedupKey IS NULL THEN i.ItemNo
                        ELSE MIN(i.ItemNo) OVER (PARTITION BY i.DedupKey)
                    END AS KeepNo
                FROM @Items AS i
            ) AS d
            OUTER APPLY (
                -- The predicates of the filtered index IX_SyncQueue_DedupKey, spelled out so that it serves.
                SELECT TOP (1) q.EnqueuedAt
                FROM dbo.SyncQueue AS q
                WHERE
                    q.DedupKey = d.DedupKey
                    AND q.DedupKey IS NOT NULL
                    AND q.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
            ) AS h;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
        END;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> @ItemCount)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, @ItemCount, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    SELECT @InsertCount = COUNT(*) FROM @Plan AS p
    WHERE p.IsDuplicate = 0;

    IF (@InsertCount > 0)
        BEGIN
            -- The keys are taken with no lock of their own, so that no lock outlives the call:
            -- a client that cancels (an attention) ends the call between two statements, where
            -- no CATCH runs. Each try reads the last key, committed or not (keys never change
            -- and only grow), and inserts just above it. A producer that took the same keys in
            -- that instant makes the INSERT fail, on its committed row (2627: PK_SyncQueue is
            -- the table's one unique constraint) or on its uncommitted one (1222: the INSERT
            -- waits for no lock, LOCK_TIMEOUT 0), and the try is made again above the new
            -- last key; a lock on the table (a purge's, say) is waited out 20 ms at a time,
            -- for up to 10 s, and so is a deploy's schema lock on it (and 601, a read without
            -- locks that lost its place to data movement). The read and the INSERT alone run
            -- under XACT_ABORT OFF, so that those errors cancel the statement, not the caller's
            -- transaction (learn.microsoft.com/sql/t-sql/statements/set-xact-abort-transact-sql;
            -- a lock time-out cancels the statement only: learn.microsoft.com/previous-versions/
            -- sql/sql-server-2005/ms177413(v=sql.90)). Neither waits for a lock, so an attention
            -- seldom lands while XACT_ABORT is OFF; when it does, the caller's transaction stays
            -- open, with the DedupKey's and group's locks, until the connection closes or is
            -- reset. Two INSERTs never wait on each other's keys: no deadlock can make the
            -- caller's transaction its victim.
            SELECT
                @XactAbort = CASE WHEN (@@OPTIONS & 16384) = 16384 THEN 1 ELSE 0 END,
                @Deadline = DATEADD(SECOND, 10, SYSUTCDATETIME()),
                @Taken = 0;
            SET LOCK_TIMEOUT 0;
            WHILE (@Taken = 0)
                BEGIN
                    BEGIN TRY
                        SET XACT_ABORT OFF; -- for the read and the INSERT alone
                        SELECT TOP (1) @Last = q.EnqueuedAt
                        FROM dbo.SyncQueue AS q WITH (READUNCOMMITTED)
                        ORDER BY q.EnqueuedAt DESC;
                        IF (@XactAbort = 1) SET XACT_ABORT ON;
                        SET @FirstEnqueuedAt = dbo.QueueNextKey_fn(@Last);
                        SET @LastEnqueuedAt = DATEADD(MICROSECOND, @InsertCount - 1, @FirstEnqueuedAt);

                        WITH numbered AS (
                            SELECT
                                p.EnqueuedAt,
                                ROW_NUMBER() OVER (ORDER BY p.ItemNo) AS Rn
                            FROM @Plan AS p
                            WHERE p.IsDuplicate = 0
                        )

                        UPDATE numbered
                        SET EnqueuedAt = DATEADD(MICROSECOND, CAST(Rn - 1 AS INT), @FirstEnqueuedAt);
                        SELECT
                            @RowCnt = @@ROWCOUNT,
                            @ErrNo = @@ERROR;

                        -- The items of this call that share an inserted item's DedupKey share its key.
                        UPDATE p
                        SET EnqueuedAt = k.EnqueuedAt
                        FROM @Plan AS p
                        INNER JOIN @Plan AS k ON p.KeepNo = k.ItemNo
                        WHERE p.ItemNo <> k.ItemNo AND k.IsDuplicate = 0;
                        SELECT
                            @RowCnt = @@ROWCOUNT,
                            @ErrNo = @@ERROR;

                        SET XACT_ABORT OFF;
                        INSERT INTO dbo.SyncQueue (
                            EnqueuedAt, [Type], EntityKey, Payload, ScheduledFor, UpdatedAt, [Priority], GroupKey,
                            DedupKey, BatchID
                        )
                        SELECT
                            p.EnqueuedAt,
                            i.[Type],
                            i.EntityKey,
                            i.Payload,
                            ISNULL(i.ScheduledFor, p.EnqueuedAt) AS ScheduledFor,
                            p.EnqueuedAt AS UpdatedAt,
                            ISNULL(i.[Priority], 0) AS [Priority],
                            i.GroupKey,
                            i.DedupKey,
                            @BatchID AS BatchID
                        FROM @Items AS i
                        INNER JOIN @Plan AS p ON i.ItemNo = p.ItemNo
                        WHERE p.IsDuplicate = 0;
                        SELECT
                            @RowCnt = @@ROWCOUNT,
                            @ErrNo = @@ERROR;
                        SET @Taken = 1;
                    END TRY
                    BEGIN CATCH
                        SET @ErrNo = ERROR_NUMBER();
                        IF (@XactAbort = 1) SET XACT_ABORT ON;
                        IF (@ErrNo NOT IN (601, 1222, 2627) OR XACT_STATE() <> 1) THROW;
                    END CATCH;
                    IF (@XactAbort = 1) SET XACT_ABORT ON;
                    IF (@Taken = 0 AND SYSUTCDATETIME() > @Deadline)
                        BEGIN
                            SELECT
                                @FirstEnqueuedAt = NULL,
                                @LastEnqueuedAt = NULL;
                            RAISERROR (735709, 16, 1, @Proc, N'new keys of dbo.SyncQueue', @ErrNo);
                            GOTO EXIT_ERROR;
                        END;
                    IF (@ErrNo = 1222) WAITFOR DELAY '00:00:00.020';
                END;
            -- The rest waits for locks as the enqueue always has: at most 5 s.
            SET LOCK_TIMEOUT 5000;
            IF (@RowCnt <> @InsertCount)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, @InsertCount, @RowCnt);
                    GOTO EXIT_ERROR;
                END;
        END;
    -- Last, after the keys' locks and the items' rows, in the order every final report takes
    -- the items' rows and then the batch's: no cycle of the two. The batch's row stays locked
    -- to the end of the transaction, so a producer holding a batch open holds up that batch's
    -- other producers and final reports, and no one else.
    IF (@BatchID IS NOT NULL)
        BEGIN
            EXEC @RetCode = dbo.Join_QueueBatch_utx
                @BatchID = @BatchID,
                @Items = @InsertCount,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
        END;

    SET @Enqueued = (
        SELECT
            p.ItemNo,
            p.EnqueuedAt,
            p.IsDuplicate
        FROM @Plan AS p
        ORDER BY p.ItemNo
        FOR JSON PATH
    );
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

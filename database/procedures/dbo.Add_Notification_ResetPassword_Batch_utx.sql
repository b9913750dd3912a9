SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_Notification_ResetPassword_Batch_utx: enqueues password-reset
   notifications, one per item of @Items, inside the caller's transaction, set-based
   (a statement per table, not a call per item). The rules are those of
   dbo.Add_Notification_ResetPassword_utx, item by item: every item is checked
   first, and one bad item means nothing is written. Each notification is a base
   row, its ResetPassword row and a row per channel it has (e-mail, SMS).
   Keys: the first is the later of now and the last key plus a microsecond
   (dbo.QueueNextKey_fn), and inserted item n (in ItemNo order, from 0) gets the
   first plus n microseconds, taken by the statements dbo.Add_SyncQueue_utx uses (with no
   lock of their own, so that no lock outlives a call its client cancels; the
   INSERT decides, and a try whose keys another producer took in that instant
   is made again). Items with a GroupKey are enqueued under their group's lock,
   held to the end of the transaction (dbo.Lock_ItemKeys_utx), so a group's
   items are committed in key order. dbo.Add_Notification_ResetPassword_utx is
   this procedure for one item.
   Deduplication, under a lock per DedupKey held to the end of the transaction
   (dbo.Lock_ItemKeys_utx): an item whose DedupKey an unfinished notification
   carries is not inserted and gets that one's key; items of one call sharing a
   DedupKey are inserted once, as the lowest ItemNo, and the others get its key.
   No error either way.
   @Items: the notifications: ItemNo, UserID (positive), Username (at most 128),
     OTP (4 to 10 letters or digits), EmailTo (NULL: no e-mail; dbo.EmailIsValid_fn),
     PreferredLanguage (a tag, 2 to 12 letters and hyphens; NULL: en), PhoneNumber
     (NULL: no SMS; E.164, dbo.PhoneIsValid_fn), at least one of EmailTo and
     PhoneNumber, ScheduledFor (UTC; NULL: now), Priority (-32768 to 32767; NULL: 0),
     GroupKey (1 to 100 characters; NULL: none), DedupKey (1 to 200; NULL: none).
     1 to 4,000 items: a bigger insert would escalate to a table lock.
   @Enqueued: OUTPUT, every item as a JSON array of {ItemNo, EnqueuedAt,
     IsDuplicate} in ItemNo order.
   @BatchID: the open batch (dbo.Open_QueueBatch_trx) the inserted notifications
     join; a duplicate does not. NULL (the default): none.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735707 an invalid item
   (named by its ItemNo; nothing is written), 735709 a DedupKey's or group's lock
   was not granted in 10 s, or free keys were not found in 10 s (a lock on the
   table held every try up), 735723 no batch @BatchID, 735724 the batch is
   sealed; an error of the INSERT itself is re-raised as it came. On error the
   caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Add_Notification_ResetPassword_Batch_utx
    @Items dbo.Notification_ResetPasswordItemList READONLY,
    @Enqueued NVARCHAR(MAX) = NULL OUTPUT,
    @BatchID INT = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Add_Notification_ResetPassword_Batch_utx';
    DECLARE @MaxItems INT = 4000;
    DECLARE @ItemCount INT;
    DECLARE @InsertCount INT;
    DECLARE @EmailCount INT;
    DECLARE @SmsCount INT;
    DECLARE @BadItem INT;
    DECLARE @Why NVARCHAR(200);
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @First dbo.[_Timestamp];
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

    SET @Enqueued = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Add_Notification_ResetPassword_Batch_utx');
            GOTO EXIT_ERROR;
        END;
    SELECT @ItemCount = COUNT(*) FROM @Items;
    IF (@ItemCount = 0 OR @ItemCount > @MaxItems)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Items must hold 1 to 4,000 items');
            GOTO EXIT_ERROR;
        END;
    -- The single-row rules, in its order. LEN and LIKE ignore trailing spaces of VARCHAR:
    -- DATALENGTH does not.
    WITH checked AS (
        SELECT
            i.ItemNo,
            CASE
                WHEN i.UserID IS NULL OR i.UserID <= 0 THEN N'UserID is required and must be positive'
                WHEN i.Username IS NULL OR LTRIM(RTRIM(i.Username)) = N'' OR LEN(i.Username) > 128
                    THEN N'Username is required, at most 128 characters'
                WHEN
                    i.OTP IS NULL OR LEN(i.OTP) NOT BETWEEN 4 AND 10 OR i.OTP LIKE '%[^0-9A-Za-z]%'
                    OR DATALENGTH(i.OTP) <> DATALENGTH(RTRIM(i.OTP))
                    THEN N'OTP must be 4 to 10 letters or digits'
                WHEN i.EmailTo IS NULL AND i.PhoneNumber IS NULL
                    THEN N'give EmailTo, PhoneNumber or both: a notification needs a channel'
                WHEN i.EmailTo IS NOT NULL AND dbo.EmailIsValid_fn(i.EmailTo) = 0
                    THEN N'EmailTo is not an e-mail address'
                WHEN i.PhoneNumber IS NOT NULL AND dbo.PhoneIsValid_fn(i.PhoneNumber) = 0
                    THEN N'PhoneNumber is not an E.164 number such as +14155550123'
                WHEN LEN(i.PreferredLanguage) NOT BETWEEN 2 AND 12 OR i.PreferredLanguage LIKE N'%[^A-Za-z-]%'
                    THEN N'PreferredLanguage must be a language tag such as en or en-GB'
                WHEN i.[Priority] NOT BETWEEN -32768 AND 32767 THEN N'Priority must be -32768 to 32767'
                WHEN LTRIM(RTRIM(i.GroupKey)) = N'' OR LEN(i.GroupKey) > 100
                    THEN N'GroupKey must be 1 to 100 characters, or NULL'
                WHEN LTRIM(RTRIM(i.DedupKey)) = N'' OR LEN(i.DedupKey) > 200
                    THEN N'DedupKey must be 1 to 200 characters, or NULL'
            END AS Why
        FROM @Items AS i
    )

    SELECT TOP (1)
        @BadItem = c.ItemNo,
        @Why = c.Why
    FROM checked AS c
    WHERE c.Why IS NOT NULL
    ORDER BY c.ItemNo;
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
                @Queue = N'dbo.Notification',
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
                -- The predicates of the filtered index IX_Notification_DedupKey, spelled out so that it serves.
                SELECT TOP (1) n.EnqueuedAt
                FROM dbo.Notification AS n
                WHERE
                    n.DedupKey = d.DedupKey
                    AND n.DedupKey IS NOT NULL
                    AND n.[Status] IN ('Pending', 'Processing', 'Error', 'Paused')
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
    SELECT
        @InsertCount = COUNT(*),
        @EmailCount = COUNT(i.EmailTo),
        @SmsCount = COUNT(i.PhoneNumber)
    FROM @Plan AS p
    INNER JOIN @Items AS i ON p.ItemNo = i.ItemNo
    WHERE p.IsDuplicate = 0;

    IF (@InsertCount > 0)
        BEGIN
            -- The keys are taken with no lock of their own, so that no lock outlives the call:
            -- a client that cancels (an attention) ends the call between two statements, where
            -- no CATCH runs. Each try reads the last key, committed or not (keys never change
            -- and only grow), and inserts just above it. A producer that took the same keys in
            -- that instant makes the INSERT fail, on its committed row (2627: PK_Notification is
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
                        SELECT TOP (1) @Last = n.EnqueuedAt
                        FROM dbo.Notification AS n WITH (READUNCOMMITTED)
                        ORDER BY n.EnqueuedAt DESC;
                        IF (@XactAbort = 1) SET XACT_ABORT ON;
                        SET @First = dbo.QueueNextKey_fn(@Last);

                        WITH numbered AS (
                            SELECT
                                p.EnqueuedAt,
                                ROW_NUMBER() OVER (ORDER BY p.ItemNo) AS Rn
                            FROM @Plan AS p
                            WHERE p.IsDuplicate = 0
                        )

                        UPDATE numbered
                        SET EnqueuedAt = DATEADD(MICROSECOND, CAST(Rn - 1 AS INT), @First);
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
                        INSERT INTO dbo.Notification (
                            EnqueuedAt, [Type], ScheduledFor, UpdatedAt, [Priority], GroupKey, DedupKey, BatchID
                        )
                        SELECT
                            p.EnqueuedAt,
                            'ResetPassword' AS [Type],
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
                            RAISERROR (735709, 16, 1, @Proc, N'new keys of dbo.Notification', @ErrNo);
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

            INSERT INTO dbo.Notification_ResetPassword (EnqueuedAt, OTP, UserID, Username)
            SELECT
                p.EnqueuedAt,
                i.OTP,
                i.UserID,
                i.Username
            FROM @Items AS i
            INNER JOIN @Plan AS p ON i.ItemNo = p.ItemNo
            WHERE p.IsDuplicate = 0;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt <> @InsertCount)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, @InsertCount, @RowCnt);
                    GOTO EXIT_ERROR;
                END;

            INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage)
            SELECT
                p.EnqueuedAt,
                i.EmailTo,
                ISNULL(i.PreferredLanguage, N'en') AS PreferredLanguage
            FROM @Items AS i
            INNER JOIN @Plan AS p ON i.ItemNo = p.ItemNo
            WHERE p.IsDuplicate = 0 AND i.EmailTo IS NOT NULL;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt <> @EmailCount)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, @EmailCount, @RowCnt);
                    GOTO EXIT_ERROR;
                END;

            INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
            SELECT
                p.EnqueuedAt,
                i.PhoneNumber
            FROM @Items AS i
            INNER JOIN @Plan AS p ON i.ItemNo = p.ItemNo
            WHERE p.IsDuplicate = 0 AND i.PhoneNumber IS NOT NULL;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt <> @SmsCount)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, @SmsCount, @RowCnt);
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

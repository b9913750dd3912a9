SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_SyncQueue_utxTests';
GO
-- The queue, faked, with job types of the tests' own (AddTestJobA and AddTestJobB: the fake
-- has no foreign key), so that no test but those of a subtype has to fill a subtype's columns.
-- Add_SyncQueue_trx reads its items back WITH (FORCESEEK): a fake has no index to seek
-- (error 8622) until its primary key is applied again.
CREATE PROCEDURE Add_SyncQueue_utxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('AddTestJobA'), ('AddTestJobB');
END;
GO
-- Each invalid-item test catches the error itself, to assert afterwards that nothing was written.
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx enqueues one Pending row when given one item]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @First dbo.[_Timestamp];
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @RetCode INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload)
    VALUES (1, 'AddTestJobA', N'C-1', N'{"name":"Ada"}');

    EXEC @RetCode = dbo.Add_SyncQueue_utx
        @Items = @Items,
        @FirstEnqueuedAt = @First OUTPUT,
        @LastEnqueuedAt = @Last OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @First IS NULL EXEC tSQLt.Fail @Message0 = N'@FirstEnqueuedAt was not returned';
    EXEC tSQLt.AssertEquals @Expected = @First, @Actual = @Last;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.EntityKey,
        q.Payload,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Type],
        a.EntityKey,
        a.Payload,
        a.[Status],
        a.[Step],
        a.AttemptNum,
        a.StartedAt,
        a.Duration,
        a.ScheduledFor,
        a.UpdatedAt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (
        EnqueuedAt,
        [Type],
        EntityKey,
        Payload,
        [Status],
        [Step],
        AttemptNum,
        StartedAt,
        Duration,
        ScheduledFor,
        UpdatedAt
    )
    VALUES (@First, 'AddTestJobA', N'C-1', N'{"name":"Ada"}', 'Pending', NULL, 0, NULL, NULL, @First, @First);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- The keys take no lock: nothing is the session's, so nothing outlives a cancelled call; a
-- DedupKey's and a group's locks are the transaction's, to its end (dbo.Lock_ItemKeys_utx's
-- names; APPLOCK_MODE: https://learn.microsoft.com/sql/t-sql/functions/applock-mode-transact-sql).
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx keeps the DedupKey and group locks and holds none of the session when it returns]
AS
BEGIN
    DECLARE @Mode NVARCHAR(32); -- an EXEC takes no function call as an argument
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    DECLARE @DedupKey NVARCHAR(200) = N'order-7';
    DECLARE @GroupKey NVARCHAR(200) = N'customer-7';
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey, DedupKey)
    VALUES (1, 'AddTestJobA', N'C-1', @GroupKey, @DedupKey);

    EXEC @RetCode = dbo.Add_SyncQueue_utx @Items = @Items;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.SyncQueue.DedupKey#' + CAST(CHECKSUM(@DedupKey) AS NVARCHAR(11)), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = @Mode,
        @Message = N'the DedupKey''s lock';
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.SyncQueue.GroupKey#' + CAST(CHECKSUM(@GroupKey) AS NVARCHAR(11)), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = @Mode,
        @Message = N'the group''s lock';
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.SyncQueue', N'Session');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'NoLock',
        @Actual = @Mode,
        @Message = N'a lock of the session';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx keeps the given ScheduledFor when an item has one]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @First dbo.[_Timestamp];
    DECLARE @Later dbo.[_Timestamp] = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @ScheduledFor dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, ScheduledFor)
    VALUES (1, 'AddTestJobB', N'SKU-1', @Later);

    EXEC dbo.Add_SyncQueue_utx @Items = @Items, @FirstEnqueuedAt = @First OUTPUT;

    SELECT
        @ScheduledFor = q.ScheduledFor,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @First;
    EXEC tSQLt.AssertEquals @Expected = @Later, @Actual = @ScheduledFor;
    EXEC tSQLt.AssertEquals @Expected = @First, @Actual = @UpdatedAt;
END;
GO
-- Keys are whole microseconds (dbo.QueueNextKey_fn), so a call's keys are one microsecond apart.
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx keys items 1 us apart by ItemNo when given three]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @First dbo.[_Timestamp];
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @Second dbo.[_Timestamp];
    DECLARE @Third dbo.[_Timestamp];
    DECLARE @RowCount INT;
    DECLARE @RetCode INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    -- Inserted out of order: the keys must follow ItemNo, not the order of the rows.
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES
    (3, 'AddTestJobA', N'C-3'),
    (1, 'AddTestJobB', N'SKU-1'),
    (2, 'AddTestJobA', N'C-2');

    EXEC @RetCode = dbo.Add_SyncQueue_utx
        @Items = @Items,
        @FirstEnqueuedAt = @First OUTPUT,
        @LastEnqueuedAt = @Last OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @First IS NULL OR @First <> CAST(@First AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'@FirstEnqueuedAt must be returned, in whole microseconds';
    SET @Second = DATEADD(MICROSECOND, 1, @First);
    SET @Third = DATEADD(MICROSECOND, 2, @First);
    SELECT
        i.ItemNo,
        q.EnqueuedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM @Items AS i
    INNER JOIN dbo.SyncQueue AS q ON i.EntityKey = q.EntityKey;
    SELECT TOP (0)
        a.ItemNo,
        a.EnqueuedAt,
        a.ScheduledFor,
        a.UpdatedAt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (ItemNo, EnqueuedAt, ScheduledFor, UpdatedAt)
    VALUES
    (1, @First, @First, @First),
    (2, @Second, @Second, @Second),
    (3, @Third, @Third, @Third);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @RowCount = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RowCount;
    EXEC tSQLt.AssertEquals @Expected = @Third, @Actual = @Last;
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx hands out later keys when called twice in a row]
AS
BEGIN
    DECLARE @Items1 dbo.SyncQueueItemList;
    DECLARE @Items2 dbo.SyncQueueItemList;
    DECLARE @First1 dbo.[_Timestamp];
    DECLARE @Last1 dbo.[_Timestamp];
    DECLARE @First2 dbo.[_Timestamp];
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items1 (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1'), (2, 'AddTestJobA', N'C-2');
    INSERT INTO @Items2 (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-3');

    EXEC dbo.Add_SyncQueue_utx @Items = @Items1, @FirstEnqueuedAt = @First1 OUTPUT, @LastEnqueuedAt = @Last1 OUTPUT;
    EXEC dbo.Add_SyncQueue_utx @Items = @Items2, @FirstEnqueuedAt = @First2 OUTPUT;

    IF @Last1 IS NULL OR @First2 IS NULL OR @First2 <= @Last1
        EXEC tSQLt.Fail @Message0 = N'the second call''s first key must be later than the first call''s last key';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx keys 1 us after the last key when it is in the future]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    -- whole microseconds, like every key dbo.QueueNextKey_fn hands out
    DECLARE @Future dbo.[_Timestamp] = CAST(DATEADD(HOUR, 1, SYSUTCDATETIME()) AS DATETIME2(6));
    DECLARE @First dbo.[_Timestamp];
    DECLARE @ExpectedFirst dbo.[_Timestamp];
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    -- A clock that stepped back: the last key handed out is later than now.
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (@Future, 'AddTestJobA', N'C-0', 'Pending', NULL, 0, NULL, @Future, @Future);
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1');

    EXEC dbo.Add_SyncQueue_utx @Items = @Items, @FirstEnqueuedAt = @First OUTPUT;

    SET @ExpectedFirst = DATEADD(MICROSECOND, 1, @Future);
    EXEC tSQLt.AssertEquals @Expected = @ExpectedFirst, @Actual = @First;
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 when an item has no Type]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, NULL, N'C-1');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: Type is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 when an item has an unknown Type]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'NoSuchSync', N'C-1');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: Type is not one of dbo.SyncQueueType%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 when an item has no EntityKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', NULL);

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: EntityKey is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 when an item has a blank EntityKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'   ');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: EntityKey is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 when an item Payload is not JSON]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload)
    VALUES (1, 'AddTestJobA', N'C-1', N'{not json');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: Payload is not valid JSON%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx writes no item when only the second item is invalid]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1'), (2, 'NoSuchSync', N'C-2');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 2: %', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 when no item is given]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Items must hold%';

    EXEC dbo.Add_SyncQueue_utx @Items = @Items;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_SyncQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Add_SyncQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735702 when called outside a transaction]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Add_SyncQueue_utx @Items = @Items;
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 and writes nothing when given more than 4000 items]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @Written INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    SELECT TOP (4001)
        ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS ItemNo,
        'AddTestJobA' AS [Type],
        N'C' AS EntityKey
    FROM sys.all_columns AS a
    CROSS JOIN sys.all_columns AS b;

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    SET @Written = (SELECT COUNT(*) FROM dbo.SyncQueue);
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Written;
END;
GO
-- An item already in the queue, in any state, carrying a DedupKey.
CREATE PROCEDURE Add_SyncQueue_utxTests.AddQueued
    @EnqueuedAt DATETIME2(7),
    @Status VARCHAR(20),
    @DedupKey NVARCHAR(200),
    @EntityKey NVARCHAR(200)
AS
BEGIN
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        [Status],
        [Step],
        AttemptNum,
        StartedAt,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        GroupKey,
        DedupKey
    )
    VALUES (@EnqueuedAt, 'AddTestJobA', @EntityKey, @Status, NULL, 0, NULL, @EnqueuedAt, @EnqueuedAt, 0, NULL, @DedupKey);
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx stores Priority GroupKey and DedupKey when an item has them]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    -- Item 2 gives none of the three: Priority 0, no group, no DedupKey.
    INSERT INTO @Items (ItemNo, [Type], EntityKey, [Priority], GroupKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-1', -5, N'customer:1', N'sync:C-1'),
    (2, 'AddTestJobB', N'SKU-1', NULL, NULL, NULL);

    EXEC @RetCode = dbo.Add_SyncQueue_utx @Items = @Items;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    SELECT
        q.EntityKey,
        q.[Priority],
        q.GroupKey,
        q.DedupKey
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EntityKey,
        a.[Priority],
        a.GroupKey,
        a.DedupKey
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EntityKey, [Priority], GroupKey, DedupKey)
    VALUES
    (N'C-1', -5, N'customer:1', N'sync:C-1'),
    (N'SKU-1', 0, NULL, NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx maps an item to the unfinished item with its DedupKey when one is queued]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @Holder DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @First DATETIME2(7);
    DECLARE @Last DATETIME2(7);
    DECLARE @Second DATETIME2(7);
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @RetCode INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = @Holder, @Status = 'Pending', @DedupKey = N'sync:C-1', @EntityKey = N'C-1';
    -- Item 2 repeats the queued request; items 1 and 3 are new.
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-2', NULL),
    (2, 'AddTestJobA', N'C-1 again', N'sync:C-1'),
    (3, 'AddTestJobA', N'C-3', N'sync:C-3');

    EXEC @RetCode = dbo.Add_SyncQueue_utx
        @Items = @Items,
        @FirstEnqueuedAt = @First OUTPUT,
        @LastEnqueuedAt = @Last OUTPUT,
        @Enqueued = @Enqueued OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'a duplicate is no error';
    IF @First IS NULL OR @First <= @Holder
        EXEC tSQLt.Fail @Message0 = N'@FirstEnqueuedAt must be a new key';
    -- The two inserted items have contiguous keys, though a duplicate lies between them.
    SET @Second = DATEADD(MICROSECOND, 1, @First);
    EXEC tSQLt.AssertEquals @Expected = @Second, @Actual = @Last, @Message = N'@LastEnqueuedAt';
    SELECT
        e.ItemNo,
        e.EnqueuedAt,
        e.IsDuplicate
    INTO #ActualEnqueued
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e;
    SELECT TOP (0)
        a.ItemNo,
        a.EnqueuedAt,
        a.IsDuplicate
    INTO #ExpectedEnqueued
    FROM #ActualEnqueued AS a;
    INSERT INTO #ExpectedEnqueued (ItemNo, EnqueuedAt, IsDuplicate)
    VALUES
    (1, @First, 0),
    (2, @Holder, 1),
    (3, @Second, 0);
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedEnqueued', @Actual = N'#ActualEnqueued', @Message = N'@Enqueued';
    -- Nothing is written for the duplicate, and the queued item is left as it was.
    SELECT
        q.EnqueuedAt,
        q.EntityKey,
        q.DedupKey,
        q.[Status],
        q.UpdatedAt
    INTO #ActualRows
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.EntityKey,
        a.DedupKey,
        a.[Status],
        a.UpdatedAt
    INTO #ExpectedRows
    FROM #ActualRows AS a;
    INSERT INTO #ExpectedRows (EnqueuedAt, EntityKey, DedupKey, [Status], UpdatedAt)
    VALUES
    (@Holder, N'C-1', N'sync:C-1', 'Pending', @Holder),
    (@First, N'C-2', NULL, 'Pending', @First),
    (@Second, N'C-3', N'sync:C-3', 'Pending', @Second);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#ExpectedRows', @Actual = N'#ActualRows', @Message = N'rows';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx inserts nothing and returns NULL keys when every item is a duplicate]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @PendingKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ProcessingKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @ErrorKey DATETIME2(7) = '2024-01-01T00:00:03';
    DECLARE @PausedKey DATETIME2(7) = '2024-01-01T00:00:04';
    -- Values from an earlier call, to see the procedure reset them.
    DECLARE @First DATETIME2(7) = '2000-01-01';
    DECLARE @Last DATETIME2(7) = '2000-01-01';
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    -- One holder in each unfinished state.
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = @PendingKey, @Status = 'Pending', @DedupKey = N'k-pending', @EntityKey = N'C-1';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = @ProcessingKey, @Status = 'Processing', @DedupKey = N'k-processing', @EntityKey = N'C-2';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = @ErrorKey, @Status = 'Error', @DedupKey = N'k-error', @EntityKey = N'C-3';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = @PausedKey, @Status = 'Paused', @DedupKey = N'k-paused', @EntityKey = N'C-4';
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-4', N'k-paused'),
    (2, 'AddTestJobA', N'C-3', N'k-error'),
    (3, 'AddTestJobA', N'C-2', N'k-processing'),
    (4, 'AddTestJobA', N'C-1', N'k-pending');

    EXEC @RetCode = dbo.Add_SyncQueue_utx
        @Items = @Items,
        @FirstEnqueuedAt = @First OUTPUT,
        @LastEnqueuedAt = @Last OUTPUT,
        @Enqueued = @Enqueued OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @First, @Message = N'@FirstEnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Last, @Message = N'@LastEnqueuedAt';
    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Rows, @Message = N'rows: the four holders only';
    SELECT
        e.ItemNo,
        e.EnqueuedAt,
        e.IsDuplicate
    INTO #Actual
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e;
    SELECT TOP (0)
        a.ItemNo,
        a.EnqueuedAt,
        a.IsDuplicate
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (ItemNo, EnqueuedAt, IsDuplicate)
    VALUES
    (1, @PausedKey, 1),
    (2, @ErrorKey, 1),
    (3, @ProcessingKey, 1),
    (4, @PendingKey, 1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'@Enqueued';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx inserts the lowest ItemNo once when items of one call share a DedupKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @First DATETIME2(7);
    DECLARE @Last DATETIME2(7);
    DECLARE @Second DATETIME2(7);
    DECLARE @Enqueued NVARCHAR(MAX);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    -- Items 2, 5 and 7 share a DedupKey (listed out of order); item 3 has none.
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (5, 'AddTestJobA', N'C-5', N'sync:x'),
    (7, 'AddTestJobA', N'C-7', N'sync:x'),
    (3, 'AddTestJobA', N'C-3', NULL),
    (2, 'AddTestJobA', N'C-2', N'sync:x');

    EXEC dbo.Add_SyncQueue_utx
        @Items = @Items,
        @FirstEnqueuedAt = @First OUTPUT,
        @LastEnqueuedAt = @Last OUTPUT,
        @Enqueued = @Enqueued OUTPUT;

    IF @First IS NULL
        EXEC tSQLt.Fail @Message0 = N'@FirstEnqueuedAt was not returned';
    SET @Second = DATEADD(MICROSECOND, 1, @First);
    EXEC tSQLt.AssertEquals @Expected = @Second, @Actual = @Last, @Message = N'@LastEnqueuedAt';
    SELECT
        e.ItemNo,
        e.EnqueuedAt,
        e.IsDuplicate
    INTO #ActualEnqueued
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e;
    SELECT TOP (0)
        a.ItemNo,
        a.EnqueuedAt,
        a.IsDuplicate
    INTO #ExpectedEnqueued
    FROM #ActualEnqueued AS a;
    INSERT INTO #ExpectedEnqueued (ItemNo, EnqueuedAt, IsDuplicate)
    VALUES
    (2, @First, 0),
    (3, @Second, 0),
    (5, @First, 1),
    (7, @First, 1);
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedEnqueued', @Actual = N'#ActualEnqueued', @Message = N'@Enqueued';
    SELECT
        q.EnqueuedAt,
        q.EntityKey,
        q.DedupKey
    INTO #ActualRows
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.EntityKey,
        a.DedupKey
    INTO #ExpectedRows
    FROM #ActualRows AS a;
    INSERT INTO #ExpectedRows (EnqueuedAt, EntityKey, DedupKey)
    VALUES
    (@First, N'C-2', N'sync:x'),
    (@Second, N'C-3', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#ExpectedRows', @Actual = N'#ActualRows', @Message = N'rows';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx enqueues a DedupKey again when the items carrying it are finished]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @First DATETIME2(7);
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @Duplicates INT;
    DECLARE @NewRows INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    -- One item in each finished state, each with its own DedupKey.
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:01', @Status = 'Completed', @DedupKey = N'k-1', @EntityKey = N'C-1';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:02', @Status = 'Failed', @DedupKey = N'k-2', @EntityKey = N'C-2';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:03', @Status = 'Cancelled', @DedupKey = N'k-3', @EntityKey = N'C-3';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:04', @Status = 'Terminated', @DedupKey = N'k-4', @EntityKey = N'C-4';
    EXEC Add_SyncQueue_utxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:05', @Status = 'PartiallyCompleted', @DedupKey = N'k-5', @EntityKey = N'C-5';
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-1', N'k-1'),
    (2, 'AddTestJobA', N'C-2', N'k-2'),
    (3, 'AddTestJobA', N'C-3', N'k-3'),
    (4, 'AddTestJobA', N'C-4', N'k-4'),
    (5, 'AddTestJobA', N'C-5', N'k-5');

    EXEC dbo.Add_SyncQueue_utx @Items = @Items, @FirstEnqueuedAt = @First OUTPUT, @Enqueued = @Enqueued OUTPUT;

    IF @First IS NULL OR @First <= '2024-01-01T00:00:05'
        EXEC tSQLt.Fail @Message0 = N'@FirstEnqueuedAt must be a new key';
    SELECT @Duplicates = COUNT(*)
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e
    WHERE e.IsDuplicate = 1 OR e.EnqueuedAt < @First;
    SELECT @NewRows = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt >= @First AND q.[Status] = 'Pending' AND q.DedupKey LIKE N'k-_';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Duplicates, @Message = N'items taken for duplicates';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @NewRows, @Message = N'new Pending items';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 naming the item when its GroupKey is blank]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey)
    VALUES
    (1, 'AddTestJobA', N'C-1', N'customer:1'),
    (2, 'AddTestJobA', N'C-2', N'   ');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 2: GroupKey%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735707 naming the item when its DedupKey is blank]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-1', N'sync:C-1'),
    (3, 'AddTestJobA', N'C-3', N'');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 3: DedupKey%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
-- dbo.SyncQueueItemList holds GroupKey in 100 characters, so a longer key is refused
-- when the list is filled (SQL Server's truncation error, 8152 or 2628 by version),
-- before the procedure could see it. Should the list ever hold more, the procedure
-- must refuse it (735707). Either way the key is never enqueued, whole or cut.
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx enqueues nothing when a GroupKey is over 100 characters]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ListError INT;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    -- A truncation error must only end its statement, not doom tSQLt's transaction.
    SET XACT_ABORT OFF;
    EXEC Add_SyncQueue_utxTests.FakeQueue;

    BEGIN TRY
        INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey)
        VALUES (1, 'AddTestJobA', N'C-1', REPLICATE(N'g', 101));
    END TRY
    BEGIN CATCH
        SET @ListError = ERROR_NUMBER();
    END CATCH;
    IF @ListError IS NULL
        BEGIN
            BEGIN TRY
                EXEC dbo.Add_SyncQueue_utx @Items = @Items;
            END TRY
            BEGIN CATCH
                SELECT
                    @ErrorNumber = ERROR_NUMBER(),
                    @ErrorMessage = ERROR_MESSAGE();
            END CATCH;
            EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
            EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: GroupKey%', @Actual = @ErrorMessage;
        END;
    IF @ListError NOT IN (8152, 2628)
        EXEC tSQLt.Fail @Message0 = N'filling the list failed with an unexpected error: ', @Message1 = @ListError;

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
-- As for GroupKey: the list holds DedupKey in 200 characters. A cut key could match
-- another request's and drop it as a duplicate.
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx enqueues nothing when a DedupKey is over 200 characters]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ListError INT;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    -- A truncation error must only end its statement, not doom tSQLt's transaction.
    SET XACT_ABORT OFF;
    EXEC Add_SyncQueue_utxTests.FakeQueue;

    BEGIN TRY
        INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
        VALUES (1, 'AddTestJobA', N'C-1', REPLICATE(N'd', 201));
    END TRY
    BEGIN CATCH
        SET @ListError = ERROR_NUMBER();
    END CATCH;
    IF @ListError IS NULL
        BEGIN
            BEGIN TRY
                EXEC dbo.Add_SyncQueue_utx @Items = @Items;
            END TRY
            BEGIN CATCH
                SELECT
                    @ErrorNumber = ERROR_NUMBER(),
                    @ErrorMessage = ERROR_MESSAGE();
            END CATCH;
            EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
            EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: DedupKey%', @Actual = @ErrorMessage;
        END;
    IF @ListError NOT IN (8152, 2628)
        EXEC tSQLt.Fail @Message0 = N'filling the list failed with an unexpected error: ', @Message1 = @ListError;

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
-- Batches: batch 7 open with 1 item, batch 8 sealed (the batch row faked).
CREATE PROCEDURE Add_SyncQueue_utxTests.AddBatches
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, SealedAt)
    VALUES (7, 'AnyJobQueue', 'BatchDone', 1, NULL), (8, 'AnyJobQueue', 'BatchDone', 1, '2024-01-01T00:00:00');
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx puts the items in the batch and counts them when given an open batch]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @Total INT;
    DECLARE @Batched INT;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    EXEC Add_SyncQueue_utxTests.AddBatches;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1'), (2, 'AddTestJobA', N'C-2');

    EXEC dbo.Add_SyncQueue_utx @Items = @Items, @BatchID = 7;

    SELECT @Total = b.Total FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    SELECT @Batched = COUNT(*) FROM dbo.SyncQueue AS q
    WHERE q.BatchID = 7;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Total;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Batched;
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 735724 when the batch is sealed]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC Add_SyncQueue_utxTests.FakeQueue;
    EXEC Add_SyncQueue_utxTests.AddBatches;
    INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, 'AddTestJobA', N'C-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735724;

    EXEC dbo.Add_SyncQueue_utx @Items = @Items, @BatchID = 8;
END;
GO

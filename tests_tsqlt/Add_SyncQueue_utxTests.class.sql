SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_SyncQueue_utxTests';
GO
-- Each invalid-item test catches the error itself, to assert afterwards that nothing was written.
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx enqueues one Pending row when given one item]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @First dbo.[_Timestamp];
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload)
    VALUES (1, 'CustomerSync', N'C-1', N'{"name":"Ada"}');

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
    VALUES (@First, 'CustomerSync', N'C-1', N'{"name":"Ada"}', 'Pending', NULL, 0, NULL, NULL, @First, @First);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, ScheduledFor)
    VALUES (1, 'InventorySync', N'SKU-1', @Later);

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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- Inserted out of order: the keys must follow ItemNo, not the order of the rows.
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES
    (3, 'CustomerSync', N'C-3'),
    (1, 'InventorySync', N'SKU-1'),
    (2, 'CustomerSync', N'C-2');

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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items1 (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1'), (2, 'CustomerSync', N'C-2');
    INSERT INTO @Items2 (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-3');

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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- A clock that stepped back: the last key handed out is later than now.
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (@Future, 'CustomerSync', N'C-0', 'Pending', NULL, 0, NULL, @Future, @Future);
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1');

    EXEC dbo.Add_SyncQueue_utx @Items = @Items, @FirstEnqueuedAt = @First OUTPUT;

    SET @ExpectedFirst = DATEADD(MICROSECOND, 1, @Future);
    EXEC tSQLt.AssertEquals @Expected = @ExpectedFirst, @Actual = @First;
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 when an item has no Type]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
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

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: Type is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 when an item has an unknown Type]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
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

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: Type is not one of dbo.SyncQueueType%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 when an item has no EntityKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', NULL);

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: EntityKey is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 when an item has a blank EntityKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'   ');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 1: EntityKey is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 when an item Payload is not JSON]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload)
    VALUES (1, 'CustomerSync', N'C-1', N'{not json');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1'), (2, 'NoSuchSync', N'C-2');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 2: %', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 when no item is given]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Items must hold%';

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
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50002 when called outside a transaction]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50002;

    EXEC dbo.Add_SyncQueue_utx @Items = @Items;
END;
GO
CREATE PROCEDURE Add_SyncQueue_utxTests.[test Add_SyncQueue_utx raises 50007 and writes nothing when given more than 4000 items]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @Written INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    SELECT TOP (4001)
        ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS ItemNo,
        'CustomerSync' AS [Type],
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
    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Written;
END;
GO

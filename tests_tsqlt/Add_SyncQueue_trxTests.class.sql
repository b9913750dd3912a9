SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_SyncQueue_trxTests';
GO
-- The queue, faked, with job types of the tests' own (AddTestJobA and AddTestJobB: the fake
-- has no foreign key), so that no test but those of a subtype has to fill a subtype's columns.
-- Add_SyncQueue_trx reads its items back WITH (FORCESEEK): a fake has no index to seek
-- (error 8622) until its primary key is applied again.
CREATE PROCEDURE Add_SyncQueue_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('AddTestJobA'), ('AddTestJobB');
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Add_SyncQueue_trx @Items = @Items;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx enqueues and commits the items when they are valid]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload)
    VALUES
    (1, 'AddTestJobA', N'C-1', N'{"name":"Ada"}'),
    (2, 'AddTestJobB', N'SKU-1', NULL);

    EXEC @RetCode = dbo.Add_SyncQueue_trx @Items = @Items;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables
    -- (AssertEqualsTable creates a work table).
    DECLARE @Rows INT = (SELECT COUNT(*) FROM dbo.SyncQueue);
    DECLARE @Matching INT = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE
            q.[Status] = 'Pending'
            AND q.AttemptNum = 0
            AND (
                (q.[Type] = 'AddTestJobA' AND q.EntityKey = N'C-1' AND q.Payload = N'{"name":"Ada"}')
                OR (q.[Type] = 'AddTestJobB' AND q.EntityKey = N'SKU-1' AND q.Payload IS NULL)
            )
    );
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Matching;
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs and its return code is never seen: the test rolls back itself.
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 735707 and leaves nothing when an item is invalid]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @RowsInTransaction INT;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1'), (2, 'AddTestJobA', NULL);

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- what the failed call wrote, seen from inside the transaction it left open
    SELECT @RowsInTransaction = COUNT(*) FROM dbo.SyncQueue;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'AddTestJobA', N'C-1');

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
-- An item already in the queue, in any state, carrying a DedupKey.
CREATE PROCEDURE Add_SyncQueue_trxTests.AddQueued
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
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx commits Priority GroupKey and DedupKey when items have them]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @Matching INT;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    -- Item 2 gives none of the three: Priority 0, no group, no DedupKey.
    INSERT INTO @Items (ItemNo, [Type], EntityKey, [Priority], GroupKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-1', 7, N'customer:1', N'sync:C-1'),
    (2, 'AddTestJobB', N'SKU-1', NULL, NULL, NULL);

    EXEC @RetCode = dbo.Add_SyncQueue_trx @Items = @Items;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    SELECT @Matching = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE
        (q.EntityKey = N'C-1' AND q.[Priority] = 7 AND q.GroupKey = N'customer:1' AND q.DedupKey = N'sync:C-1')
        OR (q.EntityKey = N'SKU-1' AND q.[Priority] = 0 AND q.GroupKey IS NULL AND q.DedupKey IS NULL);
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'rows';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Matching, @Message = N'rows as given';
END;
GO
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx writes nothing for an item when an unfinished item has its DedupKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @Holder DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @HolderUnchanged INT;
    DECLARE @FirstNew DATETIME2(7);
    DECLARE @LastNew DATETIME2(7);
    DECLARE @NewRows INT;
    DECLARE @Gap DATETIME2(7);
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    EXEC Add_SyncQueue_trxTests.AddQueued
        @EnqueuedAt = @Holder, @Status = 'Processing', @DedupKey = N'sync:C-1', @EntityKey = N'C-1';
    -- Item 2 repeats the request being processed; items 1 and 3 are new.
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-2', NULL),
    (2, 'AddTestJobA', N'C-1 again', N'sync:C-1'),
    (3, 'AddTestJobA', N'C-3', N'sync:C-3');

    EXEC @RetCode = dbo.Add_SyncQueue_trx @Items = @Items;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'a duplicate is no error';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    SELECT @HolderUnchanged = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE
        q.EnqueuedAt = @Holder
        AND q.EntityKey = N'C-1'
        AND q.[Status] = 'Processing'
        AND q.UpdatedAt = @Holder;
    SELECT
        @NewRows = COUNT(*),
        @FirstNew = MIN(q.EnqueuedAt),
        @LastNew = MAX(q.EnqueuedAt)
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt > @Holder;
    SET @Gap = DATEADD(MICROSECOND, 1, @FirstNew);
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows, @Message = N'rows: the holder and two new items';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @HolderUnchanged, @Message = N'the holder is unchanged';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @NewRows, @Message = N'new items';
    EXEC tSQLt.AssertEquals @Expected = @Gap, @Actual = @LastNew, @Message = N'the new keys are contiguous';
    SELECT @Rows = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE
        (q.EnqueuedAt = @FirstNew AND q.EntityKey = N'C-2')
        OR (q.EnqueuedAt = @LastNew AND q.EntityKey = N'C-3' AND q.DedupKey = N'sync:C-3');
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'the new items, in ItemNo order';
END;
GO
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx inserts the lowest ItemNo once when items of one call share a DedupKey]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    DECLARE @Kept NVARCHAR(200);
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (4, 'AddTestJobA', N'C-4', N'sync:x'),
    (2, 'AddTestJobA', N'C-2', N'sync:x'),
    (9, 'AddTestJobA', N'C-9', N'sync:x');

    EXEC @RetCode = dbo.Add_SyncQueue_trx @Items = @Items;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Rows = COUNT(*),
        @Kept = MAX(q.EntityKey)
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'rows';
    EXEC tSQLt.AssertEqualsString @Expected = N'C-2', @Actual = @Kept, @Message = N'the item inserted';
END;
GO
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx returns 0 and inserts nothing when every item is a duplicate]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    EXEC Add_SyncQueue_trxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:01', @Status = 'Pending', @DedupKey = N'k-1', @EntityKey = N'C-1';
    EXEC Add_SyncQueue_trxTests.AddQueued
        @EnqueuedAt = '2024-01-01T00:00:02', @Status = 'Paused', @DedupKey = N'k-2', @EntityKey = N'C-2';
    INSERT INTO @Items (ItemNo, [Type], EntityKey, DedupKey)
    VALUES
    (1, 'AddTestJobA', N'C-1', N'k-1'),
    (2, 'AddTestJobA', N'C-2', N'k-2'),
    (3, 'AddTestJobA', N'C-1', N'k-1');

    EXEC @RetCode = dbo.Add_SyncQueue_trx @Items = @Items;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'rows: the two holders only';
END;
GO
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 735707 naming the item and leaves nothing when its GroupKey is blank]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Rows INT;
    EXEC Add_SyncQueue_trxTests.FakeQueue;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, GroupKey)
    VALUES (1, 'AddTestJobA', N'C-1', N'customer:1'), (2, 'AddTestJobA', N'C-2', N'');

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 2: GroupKey%', @Actual = @ErrorMessage;
    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'EnqueuedAt, Type, EntityKey, ItemNo, IsDuplicate';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'DECLARE @Items dbo.SyncQueueItemList; EXEC dbo.Add_SyncQueue_trx @Items = @Items;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_SyncQueue_trxTests';
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 50001 when a transaction is open]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey, Payload)
    VALUES
    (1, 'CustomerSync', N'C-1', N'{"name":"Ada"}'),
    (2, 'InventorySync', N'SKU-1', NULL);

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
                (q.[Type] = 'CustomerSync' AND q.EntityKey = N'C-1' AND q.Payload = N'{"name":"Ada"}')
                OR (q.[Type] = 'InventorySync' AND q.EntityKey = N'SKU-1' AND q.Payload IS NULL)
            )
    );
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Matching;
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs and its return code is never seen: the test rolls back itself.
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 50007 and leaves nothing when an item is invalid]
AS
BEGIN
    DECLARE @Items dbo.SyncQueueItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @RowsInTransaction INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1'), (2, 'CustomerSync', NULL);

    BEGIN TRY
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- what the failed call wrote, seen from inside the transaction it left open
    SELECT @RowsInTransaction = COUNT(*) FROM dbo.SyncQueue;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.SyncQueue';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Add_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_SyncQueue_trxTests.[test Add_SyncQueue_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Items dbo.SyncQueueItemList;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO @Items (ItemNo, [Type], EntityKey)
    VALUES (1, 'CustomerSync', N'C-1');

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
END;
GO

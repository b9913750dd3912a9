SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_LifoStack_utxTests';
GO
-- A receive is a DELETE ... OUTPUT, whose rows SQL Server refuses to capture through
-- INSERT ... EXEC: these tests assert on the rows left in the stack instead. The
-- returned rows themselves are checked by the Python live tests.
--
-- The stack faked without its identity, so that the tests give the Ids, and holding
-- messages 1, 2 and 3 (3 the newest), inserted oldest first so that a receive that
-- ignored the order would take the oldest.
CREATE PROCEDURE Receive_LifoStack_utxTests.FakeStackOfThree
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Defaults = 1;
    INSERT INTO dbo.LifoStack (Id, Payload, EnqueuedAt)
    VALUES
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02'),
    (3, 0x03, '2024-01-01T00:00:03');
END;
GO
-- Asserts that @BatchSize is refused with 735707 and that the three messages stay.
CREATE PROCEDURE Receive_LifoStack_utxTests.AssertBatchSizeRefused
    @BatchSize INT
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @RowCount INT;

    BEGIN TRY
        EXEC dbo.Receive_LifoStack_utx @BatchSize = @BatchSize;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = N'error number';
    SELECT @RowCount = COUNT(*) FROM dbo.LifoStack;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RowCount, @Message = N'messages left in the stack';
END;
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_LifoStack_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx takes the two newest messages when the batch size is 2]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT s.Id INTO #Actual FROM dbo.LifoStack AS s;
    SELECT TOP (0) a.Id INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected (Id) VALUES (1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx takes only the newest message when no batch size is given]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC @RetCode = dbo.Receive_LifoStack_utx;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT s.Id INTO #Actual FROM dbo.LifoStack AS s;
    SELECT TOP (0) a.Id INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected (Id) VALUES (1), (2);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx empties the stack when the batch size exceeds its size]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 5;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.LifoStack';
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx accepts the largest batch when the batch size is 1000]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 1000;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.LifoStack';
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx returns 0 when the stack is empty]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Defaults = 1;

    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 5;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.LifoStack';
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx raises 735707 and removes nothing when the batch size is NULL]
AS
BEGIN
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC Receive_LifoStack_utxTests.AssertBatchSizeRefused @BatchSize = NULL;
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx raises 735707 and removes nothing when the batch size is 0]
AS
BEGIN
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC Receive_LifoStack_utxTests.AssertBatchSizeRefused @BatchSize = 0;
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx raises 735707 and removes nothing when the batch size is minus 1]
AS
BEGIN
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC Receive_LifoStack_utxTests.AssertBatchSizeRefused @BatchSize = -1;
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx raises 735707 and removes nothing when the batch size is 1001]
AS
BEGIN
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    EXEC Receive_LifoStack_utxTests.AssertBatchSizeRefused @BatchSize = 1001;
END;
GO
-- The caller's rollback gives the message back (at-least-once). A savepoint rolls back
-- the receive only: tSQLt's own transaction stays open, and so do the fakes.
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx puts the message back when the caller rolls back]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @LeftBeforeRollback INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Defaults = 1;
    INSERT INTO dbo.LifoStack (Id, Payload, EnqueuedAt)
    VALUES (1, 0x01, '2024-01-01T00:00:01');

    SAVE TRANSACTION BeforeReceive;
    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 1;
    SELECT @LeftBeforeRollback = COUNT(*) FROM dbo.LifoStack;
    ROLLBACK TRANSACTION BeforeReceive;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals
        @Expected = 0, @Actual = @LeftBeforeRollback, @Message = N'messages left before the rollback';
    SELECT s.Id INTO #Actual FROM dbo.LifoStack AS s;
    SELECT TOP (0) a.Id INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected (Id) VALUES (1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
--[@tSQLt:NoTransaction]('Receive_LifoStack_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx raises 735702 when no transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Receive_LifoStack_utx @BatchSize = 1;
END;
GO
-- .NET's TransactionScope defaults to SERIALIZABLE, where SQL Server refuses READPAST:
-- the procedure runs at READ COMMITTED whatever the caller's level.
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx takes the two newest messages when the caller runs SERIALIZABLE]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeStackOfThree;

    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT s.Id INTO #Actual FROM dbo.LifoStack AS s;
    SELECT TOP (0) a.Id INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected (Id) VALUES (1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO

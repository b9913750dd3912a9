SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_LifoStack_utxTests';
GO
-- A receive returns its rows with a SELECT, which INSERT ... EXEC captures: the tests of
-- DeliveryCount capture them; the others assert on the rows left in the stack (the Python
-- live tests check the rows returned too).
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
-- The failure counts (dbo.MessageFailure) the receive reads and deletes.
-- The queue holds three messages, Ids 1 (oldest) to 3 (newest); a receive of two takes 3 and 2. Message 3 failed twice
-- before and 1 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_LifoStack_utxTests.FakeQueueAndFailures
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack';
    INSERT INTO dbo.LifoStack (Id, Payload, EnqueuedAt)
    VALUES
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02'),
    (3, 0x03, '2024-01-01T00:00:03');
    EXEC tSQLt.FakeTable @TableName = N'dbo.MessageFailure';
    INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
    VALUES
    ('LifoStack', 3, 2, N'twice', '2024-01-02T00:00:00', '2024-01-02T00:05:00'),
    ('LifoStack', 1, 1, N'once', '2024-01-02T00:00:00', '2024-01-02T00:00:00'),
    ('FifoQueue', 2, 4, N'other', '2024-01-02T00:00:00', '2024-01-02T00:05:00');
END;
GO
-- Asserts the counts left, as a sorted list of Kind:MessageKey:Failures.
CREATE PROCEDURE Receive_LifoStack_utxTests.AssertFailuresLeft
    @Expected VARCHAR(400)
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CONCAT(f.Kind, ':', f.MessageKey, ':', f.Failures), ',') WITHIN GROUP (
                ORDER BY f.Kind, f.MessageKey
            ),
            ''
        )
    FROM dbo.MessageFailure AS f;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = N'failure counts left';
END;
GO
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_LifoStack_utxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,LifoStack:1:1';
END;
GO
-- INSERT ... EXEC captures the rows: the receive returns them with a SELECT
-- (https://learn.microsoft.com/sql/t-sql/statements/insert-transact-sql, execute_statement).
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx returns DeliveryCount as one more than the failures when a message failed before]
AS
BEGIN
    DECLARE @Actual VARCHAR(100);
    EXEC Receive_LifoStack_utxTests.FakeQueueAndFailures;
    CREATE TABLE #Received (
        Id BIGINT,
        Payload VARBINARY(MAX),
        EnqueuedAt DATETIME2(7),
        DeliveryCount INT
    );

    INSERT INTO #Received
    EXEC dbo.Receive_LifoStack_utx @BatchSize = 2;

    SELECT @Actual = STRING_AGG(CONCAT(r.Id, ':', r.DeliveryCount), ',') WITHIN GROUP (ORDER BY r.Id)
    FROM #Received AS r;
    EXEC tSQLt.AssertEqualsString
        @Expected = '2:1,3:3', @Actual = @Actual, @Message = N'key:DeliveryCount';
END;
GO
-- tSQLt's own transaction stays open: only the work after the savepoint is undone, as a
-- consumer's rollback undoes its receive.
CREATE PROCEDURE Receive_LifoStack_utxTests.[test Receive_LifoStack_utx keeps the counts when the caller rolls back]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_utxTests.FakeQueueAndFailures;

    SAVE TRANSACTION BeforeReceive;
    EXEC @RetCode = dbo.Receive_LifoStack_utx @BatchSize = 2;
    ROLLBACK TRANSACTION BeforeReceive;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_LifoStack_utxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,LifoStack:1:1,LifoStack:3:2';
END;
GO

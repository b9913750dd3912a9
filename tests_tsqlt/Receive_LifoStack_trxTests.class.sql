SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_LifoStack_trxTests';
GO
-- The procedure returns its messages as a result set, which a test cannot capture:
-- INSERT ... EXEC would run the _trx inside a transaction, where it refuses. These
-- tests assert on the rows left in the stack instead.
--
-- The stack faked without its identity, so that the tests give the Ids. In a
-- NoTransaction test the fake holds the committed rows; tSQLt puts the real table back
-- after the test.
CREATE PROCEDURE Receive_LifoStack_trxTests.FakeStack
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Defaults = 1;
END;
GO
-- Messages 1, 2 and 3 (3 the newest), inserted oldest first.
CREATE PROCEDURE Receive_LifoStack_trxTests.FakeStackOfThree
AS
BEGIN
    EXEC Receive_LifoStack_trxTests.FakeStack;
    INSERT INTO dbo.LifoStack (Id, Payload, EnqueuedAt)
    VALUES
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02'),
    (3, 0x03, '2024-01-01T00:00:03');
END;
GO
-- The Ids left in the stack, in order: a NoTransaction test compares values, because
-- tSQLt.AssertEqualsTable leaves a work table behind that tSQLt reports as an error.
CREATE PROCEDURE Receive_LifoStack_trxTests.AssertRemaining
    @Expected VARCHAR(100)
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT @Actual = ISNULL(STRING_AGG(CAST(s.Id AS VARCHAR(20)), ',') WITHIN GROUP (ORDER BY s.Id), '')
    FROM dbo.LifoStack AS s;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = N'messages left';
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_LifoStack_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Receive_LifoStack_trxTests.[test Receive_LifoStack_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Receive_LifoStack_trxTests.FakeStackOfThree;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Receive_LifoStack_trx @BatchSize = 1;
END;
GO
--[@tSQLt:NoTransaction]('Receive_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_LifoStack_trxTests.[test Receive_LifoStack_trx takes the newest messages and commits when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_LifoStack_trxTests.FakeStackOfThree;

    EXEC @RetCode = dbo.Receive_LifoStack_trx @BatchSize = 2;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC Receive_LifoStack_trxTests.AssertRemaining @Expected = '1';
END;
GO
--[@tSQLt:NoTransaction]('Receive_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_LifoStack_trxTests.[test Receive_LifoStack_trx returns 0 when the stack is empty]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_LifoStack_trxTests.FakeStack;

    EXEC @RetCode = dbo.Receive_LifoStack_trx @BatchSize = 5;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.LifoStack';
END;
GO
-- The batch size is checked before the transaction begins, so none is left open.
--[@tSQLt:NoTransaction]('Receive_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_LifoStack_trxTests.[test Receive_LifoStack_trx raises 735707 and removes nothing when the batch size is 0]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @TranCount INT;
    DECLARE @RowCount INT;
    EXEC Receive_LifoStack_trxTests.FakeStackOfThree;

    BEGIN TRY
        EXEC dbo.Receive_LifoStack_trx @BatchSize = 0;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = N'error number';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT @RowCount = COUNT(*) FROM dbo.LifoStack;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RowCount, @Message = N'messages left in the stack';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Receive_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_LifoStack_trxTests.[test Receive_LifoStack_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Receive_LifoStack_trxTests.FakeStackOfThree;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Receive_LifoStack_trx @BatchSize = 1;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
-- The failure counts (dbo.MessageFailure) the receive reads and deletes.
-- The queue holds three messages, Ids 1 (oldest) to 3 (newest); a receive of two takes 3 and 2. Message 3 failed twice
-- before and 1 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_LifoStack_trxTests.FakeQueueAndFailures
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
CREATE PROCEDURE Receive_LifoStack_trxTests.AssertFailuresLeft
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
--[@tSQLt:NoTransaction]('Receive_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_LifoStack_trxTests.[test Receive_LifoStack_trx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_LifoStack_trxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_LifoStack_trx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_LifoStack_trxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,LifoStack:1:1';
END;
GO

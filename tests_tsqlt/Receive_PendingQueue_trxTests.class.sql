SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_PendingQueue_trxTests';
GO
-- The procedure returns its messages as a result set, which a test cannot capture:
-- INSERT ... EXEC would run the _trx inside a transaction, where it refuses. These
-- tests assert on the rows left in the queue instead.
--
-- The queue faked without its identity, so that the tests give the Ids. In a
-- NoTransaction test the fake holds the committed rows; tSQLt puts the real table back
-- after the test.
CREATE PROCEDURE Receive_PendingQueue_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.PendingQueue', @Defaults = 1;
END;
GO
-- Message 1 due in one hour, 2 due 5 minutes ago, 3 due 10 minutes ago.
CREATE PROCEDURE Receive_PendingQueue_trxTests.FakeQueueOfThree
AS
BEGIN
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    EXEC Receive_PendingQueue_trxTests.FakeQueue;
    INSERT INTO dbo.PendingQueue (Id, DueAt, Payload, EnqueuedAt)
    VALUES
    (1, DATEADD(HOUR, 1, @Now), 0x01, '2024-01-01T00:00:01'),
    (2, DATEADD(MINUTE, -5, @Now), 0x02, '2024-01-01T00:00:02'),
    (3, DATEADD(MINUTE, -10, @Now), 0x03, '2024-01-01T00:00:03');
END;
GO
-- The Ids left in the queue, in order: a NoTransaction test compares values, because
-- tSQLt.AssertEqualsTable leaves a work table behind that tSQLt reports as an error.
CREATE PROCEDURE Receive_PendingQueue_trxTests.AssertRemaining
    @Expected VARCHAR(100)
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT @Actual = ISNULL(STRING_AGG(CAST(q.Id AS VARCHAR(20)), ',') WITHIN GROUP (ORDER BY q.Id), '')
    FROM dbo.PendingQueue AS q;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = N'messages left';
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_PendingQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Receive_PendingQueue_trxTests.FakeQueueOfThree;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Receive_PendingQueue_trx @BatchSize = 1;
END;
GO
--[@tSQLt:NoTransaction]('Receive_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx takes the due messages and commits when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_PendingQueue_trxTests.FakeQueueOfThree;

    EXEC @RetCode = dbo.Receive_PendingQueue_trx @BatchSize = 5;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC Receive_PendingQueue_trxTests.AssertRemaining @Expected = '1';
END;
GO
--[@tSQLt:NoTransaction]('Receive_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx takes the earliest due message when the batch size is 1]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_PendingQueue_trxTests.FakeQueueOfThree;

    EXEC @RetCode = dbo.Receive_PendingQueue_trx @BatchSize = 1;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC Receive_PendingQueue_trxTests.AssertRemaining @Expected = '1,2';
END;
GO
--[@tSQLt:NoTransaction]('Receive_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx returns 0 when the queue is empty]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_PendingQueue_trxTests.FakeQueue;

    EXEC @RetCode = dbo.Receive_PendingQueue_trx @BatchSize = 5;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.PendingQueue';
END;
GO
-- The batch size is checked before the transaction begins, so none is left open.
--[@tSQLt:NoTransaction]('Receive_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx raises 735707 and removes nothing when the batch size is 0]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @TranCount INT;
    DECLARE @RowCount INT;
    EXEC Receive_PendingQueue_trxTests.FakeQueueOfThree;

    BEGIN TRY
        EXEC dbo.Receive_PendingQueue_trx @BatchSize = 0;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = N'error number';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT @RowCount = COUNT(*) FROM dbo.PendingQueue;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RowCount, @Message = N'messages left in the queue';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Receive_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Receive_PendingQueue_trxTests.FakeQueueOfThree;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Receive_PendingQueue_trx @BatchSize = 1;
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
-- The queue holds three due messages, Ids 1 (due first) to 3; a receive of two takes 1 and 2. Message 1 failed twice
-- before and 3 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_PendingQueue_trxTests.FakeQueueAndFailures
AS
BEGIN
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    EXEC tSQLt.FakeTable @TableName = N'dbo.PendingQueue', @Defaults = 1;
    INSERT INTO dbo.PendingQueue (Id, DueAt, Payload, EnqueuedAt)
    VALUES
    (1, DATEADD(MINUTE, -30, @Now), 0x01, '2024-01-01T00:00:01'),
    (2, DATEADD(MINUTE, -20, @Now), 0x02, '2024-01-01T00:00:02'),
    (3, DATEADD(MINUTE, -10, @Now), 0x03, '2024-01-01T00:00:03');
    EXEC tSQLt.FakeTable @TableName = N'dbo.MessageFailure';
    INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
    VALUES
    ('PendingQueue', 1, 2, N'twice', '2024-01-02T00:00:00', '2024-01-02T00:05:00'),
    ('PendingQueue', 3, 1, N'once', '2024-01-02T00:00:00', '2024-01-02T00:00:00'),
    ('FifoQueue', 2, 4, N'other', '2024-01-02T00:00:00', '2024-01-02T00:05:00');
END;
GO
-- Asserts the counts left, as a sorted list of Kind:MessageKey:Failures.
CREATE PROCEDURE Receive_PendingQueue_trxTests.AssertFailuresLeft
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
--[@tSQLt:NoTransaction]('Receive_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_PendingQueue_trxTests.[test Receive_PendingQueue_trx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_PendingQueue_trxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_PendingQueue_trx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_PendingQueue_trxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,PendingQueue:3:1';
END;
GO

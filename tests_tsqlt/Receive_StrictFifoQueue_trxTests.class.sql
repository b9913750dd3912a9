SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_StrictFifoQueue_trxTests';
GO
-- A receive returns the rows of a DELETE ... OUTPUT, and a _trx refuses INSERT ... EXEC:
-- these tests assert on the rows left in the queue (the Python live tests check the rows
-- returned).
-- Three messages, Ids 1 (oldest) to 3 (newest), inserted out of Id order: the faked table
-- is a heap without the clustered key, so only the receive's ORDER BY Id takes the oldest.
-- Faked without @Identity, Id is a plain column and takes explicit values.
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.AddThreeMessages
AS
BEGIN
    INSERT INTO dbo.StrictFifoQueue (Id, Payload, EnqueuedAt)
    VALUES
    (3, 0x03, '2024-01-01T00:00:03'),
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02');
END;
GO
-- Run after each NoTransaction test: a procedure that raised an error inside
-- tSQLt's TRY...CATCH may leave a transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.[test Receive_StrictFifoQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_trxTests.AddThreeMessages;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Receive_StrictFifoQueue_trx @BatchSize = 1;
END;
GO
-- In a NoTransaction test the fake holds committed rows; tSQLt puts the real table back afterwards.
--[@tSQLt:NoTransaction]('Receive_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.[test Receive_StrictFifoQueue_trx receives the two oldest and commits when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @RemainingId BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_trxTests.AddThreeMessages;

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_trx @BatchSize = 2;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'messages left';
    SELECT @RemainingId = q.Id FROM dbo.StrictFifoQueue AS q;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RemainingId, @Message = N'the newest must be left';
END;
GO
--[@tSQLt:NoTransaction]('Receive_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.[test Receive_StrictFifoQueue_trx returns 0 and commits when the queue is empty]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'messages in the queue';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Receive_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.[test Receive_StrictFifoQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_trxTests.AddThreeMessages;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Receive_StrictFifoQueue_trx @BatchSize = 1;
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
-- The queue holds three messages, Ids 1 (oldest) to 3 (newest); a receive of two takes 1 and 2. Message 1 failed twice
-- before and 3 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.FakeQueueAndFailures
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    INSERT INTO dbo.StrictFifoQueue (Id, Payload, EnqueuedAt)
    VALUES
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02'),
    (3, 0x03, '2024-01-01T00:00:03');
    EXEC tSQLt.FakeTable @TableName = N'dbo.MessageFailure';
    INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
    VALUES
    ('StrictFifoQueue', 1, 2, N'twice', '2024-01-02T00:00:00', '2024-01-02T00:05:00'),
    ('StrictFifoQueue', 3, 1, N'once', '2024-01-02T00:00:00', '2024-01-02T00:00:00'),
    ('FifoQueue', 2, 4, N'other', '2024-01-02T00:00:00', '2024-01-02T00:05:00');
END;
GO
-- Asserts the counts left, as a sorted list of Kind:MessageKey:Failures.
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.AssertFailuresLeft
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
--[@tSQLt:NoTransaction]('Receive_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_StrictFifoQueue_trxTests.[test Receive_StrictFifoQueue_trx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_StrictFifoQueue_trxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_trx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_StrictFifoQueue_trxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,StrictFifoQueue:3:1';
END;
GO

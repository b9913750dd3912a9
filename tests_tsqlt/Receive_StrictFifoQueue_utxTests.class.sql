SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_StrictFifoQueue_utxTests';
GO
-- A receive returns its rows with a SELECT, which INSERT ... EXEC captures: the tests of
-- DeliveryCount capture them; the others assert on the rows left in the queue (the Python
-- live tests check the rows returned too).
-- Three messages, Ids 1 (oldest) to 3 (newest), inserted out of Id order: the faked table
-- is a heap without the clustered key, so only the receive's ORDER BY Id takes the oldest.
-- Faked without @Identity, Id is a plain column and takes explicit values.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.AddThreeMessages
AS
BEGIN
    INSERT INTO dbo.StrictFifoQueue (Id, Payload, EnqueuedAt)
    VALUES
    (3, 0x03, '2024-01-01T00:00:03'),
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02');
END;
GO
-- Catches the error itself, to assert afterwards that the three messages are still queued.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.AssertBatchSizeRefused
    @BatchSize INT
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Rows INT;

    BEGIN TRY
        EXEC dbo.Receive_StrictFifoQueue_utx @BatchSize = @BatchSize;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@BatchSize must be 1 to 1000%', @Actual = @ErrorMessage;
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows, @Message = N'messages still queued';
END;
GO
-- Run after each NoTransaction test: a procedure that raised an error inside
-- tSQLt's TRY...CATCH may leave a transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx receives the two oldest when BatchSize is 2 and three are queued]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    DECLARE @RemainingId BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'messages left';
    SELECT @RemainingId = q.Id FROM dbo.StrictFifoQueue AS q;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RemainingId, @Message = N'the newest must be left';
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx empties the queue when BatchSize is 5 and three are queued]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx @BatchSize = 5;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.StrictFifoQueue';
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx returns 0 when the queue is empty]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.StrictFifoQueue';
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx raises 735707 and removes nothing when BatchSize is NULL]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    EXEC Receive_StrictFifoQueue_utxTests.AssertBatchSizeRefused @BatchSize = NULL;
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx raises 735707 and removes nothing when BatchSize is 0]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    EXEC Receive_StrictFifoQueue_utxTests.AssertBatchSizeRefused @BatchSize = 0;
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx raises 735707 and removes nothing when BatchSize is negative]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    EXEC Receive_StrictFifoQueue_utxTests.AssertBatchSizeRefused @BatchSize = -1;
END;
GO
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx raises 735707 and removes nothing when BatchSize is over 1000]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    EXEC Receive_StrictFifoQueue_utxTests.AssertBatchSizeRefused @BatchSize = 1001;
END;
GO
-- tSQLt's own transaction stays open: only the work after the savepoint is undone.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx puts the message back when the caller rolls back to a savepoint]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @RowsAfterReceive INT;
    DECLARE @RowsAfterRollback INT;
    DECLARE @OldestBack INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    SAVE TRANSACTION BeforeReceive;
    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx @BatchSize = 1;
    SELECT @RowsAfterReceive = COUNT(*) FROM dbo.StrictFifoQueue;
    ROLLBACK TRANSACTION BeforeReceive;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @RowsAfterReceive, @Message = N'messages left after the receive';
    SELECT @RowsAfterRollback = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RowsAfterRollback, @Message = N'messages after the rollback';
    SELECT @OldestBack = COUNT(*) FROM dbo.StrictFifoQueue AS q
    WHERE q.Id = 1 AND q.Payload = 0x01;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @OldestBack, @Message = N'the oldest must be back';
END;
GO
-- A NoTransaction test makes no permanent objects, so it counts rows instead of comparing tables.
--[@tSQLt:NoTransaction]('Receive_StrictFifoQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx raises 735702 and removes nothing when called outside a transaction]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    BEGIN TRY
        EXEC dbo.Receive_StrictFifoQueue_utx @BatchSize = 1;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735702, @Actual = @ErrorNumber;
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows, @Message = N'messages still queued';
END;
GO
-- .NET's TransactionScope defaults to SERIALIZABLE: the procedure runs at READ COMMITTED
-- whatever the caller's level, like every receive.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx receives the two oldest when the caller runs SERIALIZABLE]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    DECLARE @RemainingId BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC Receive_StrictFifoQueue_utxTests.AddThreeMessages;

    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'messages left';
    SELECT @RemainingId = q.Id FROM dbo.StrictFifoQueue AS q;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RemainingId, @Message = N'the newest must be left';
END;
GO
-- The failure counts (dbo.MessageFailure) the receive reads and deletes.
-- The queue holds three messages, Ids 1 (oldest) to 3 (newest); a receive of two takes 1 and 2. Message 1 failed twice
-- before and 3 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.FakeQueueAndFailures
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
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.AssertFailuresLeft
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
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_StrictFifoQueue_utxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_StrictFifoQueue_utxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,StrictFifoQueue:3:1';
END;
GO
-- INSERT ... EXEC captures the rows: the receive returns them with a SELECT
-- (https://learn.microsoft.com/sql/t-sql/statements/insert-transact-sql, execute_statement).
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx returns DeliveryCount as one more than the failures when a message failed before]
AS
BEGIN
    DECLARE @Actual VARCHAR(100);
    EXEC Receive_StrictFifoQueue_utxTests.FakeQueueAndFailures;
    CREATE TABLE #Received (
        Id BIGINT,
        Payload VARBINARY(MAX),
        EnqueuedAt DATETIME2(7),
        DeliveryCount INT
    );

    INSERT INTO #Received
    EXEC dbo.Receive_StrictFifoQueue_utx @BatchSize = 2;

    SELECT @Actual = STRING_AGG(CONCAT(r.Id, ':', r.DeliveryCount), ',') WITHIN GROUP (ORDER BY r.Id)
    FROM #Received AS r;
    EXEC tSQLt.AssertEqualsString
        @Expected = '1:3,2:1', @Actual = @Actual, @Message = N'key:DeliveryCount';
END;
GO
-- tSQLt's own transaction stays open: only the work after the savepoint is undone, as a
-- consumer's rollback undoes its receive.
CREATE PROCEDURE Receive_StrictFifoQueue_utxTests.[test Receive_StrictFifoQueue_utx keeps the counts when the caller rolls back]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_StrictFifoQueue_utxTests.FakeQueueAndFailures;

    SAVE TRANSACTION BeforeReceive;
    EXEC @RetCode = dbo.Receive_StrictFifoQueue_utx @BatchSize = 2;
    ROLLBACK TRANSACTION BeforeReceive;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_StrictFifoQueue_utxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,StrictFifoQueue:1:2,StrictFifoQueue:3:1';
END;
GO

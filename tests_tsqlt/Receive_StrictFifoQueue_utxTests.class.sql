SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_StrictFifoQueue_utxTests';
GO
-- A receive is a DELETE ... OUTPUT, whose rows SQL Server refuses to capture through
-- INSERT ... EXEC: these tests assert on the rows left in the queue (the Python live tests
-- check the rows returned).
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

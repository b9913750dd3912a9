SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Seal_QueueBatch_trxTests';
GO
-- The batches faked (in a NoTransaction test the fake holds the committed rows; tSQLt puts
-- the real table back after the test), the callback spied: its tests are its own class's.
-- Batch 7: open, 3 items, 1 completed. Batch 8: open, 2 items, both finished. Batch 9: sealed.
CREATE PROCEDURE Seal_QueueBatch_trxTests.AddBatches
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    -- The spy marks each call on its batch: a star more in its Name (the batches start unnamed).
    EXEC tSQLt.SpyProcedure
        @ProcedureName = N'dbo.Callback_QueueBatch_utx',
        @CommandToExecute = N'UPDATE dbo.QueueBatch SET [Name] = CONCAT([Name], N''*'') WHERE BatchID = @BatchID;';
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, Completed, Failed, SealedAt)
    VALUES
    (7, 'AnyJobQueue', 'BatchDone', 3, 1, 0, NULL),
    (8, 'AnyJobQueue', 'BatchDone', 2, 1, 1, NULL),
    (9, 'AnyJobQueue', 'BatchDone', 2, 0, 0, '2024-01-01T00:00:00');
END;
GO
-- Named in each NoTransaction annotation: a _trx that raised an error inside tSQLt's
-- TRY...CATCH leaves its own transaction open.
CREATE PROCEDURE Seal_QueueBatch_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Seal_QueueBatch_trxTests.[test Seal_QueueBatch_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Seal_QueueBatch_trxTests.AddBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Seal_QueueBatch_trx @BatchID = 7;
END;
GO
--[@tSQLt:NoTransaction]('Seal_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Seal_QueueBatch_trxTests.[test Seal_QueueBatch_trx seals the batch and enqueues no callback when items are left]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @SealedAt DATETIME2(7);
    DECLARE @FinishedAt DATETIME2(7);
    DECLARE @Calls INT;
    EXEC Seal_QueueBatch_trxTests.AddBatches;

    EXEC @RetCode = dbo.Seal_QueueBatch_trx @BatchID = 7;

    SELECT
        @SealedAt = b.SealedAt,
        @FinishedAt = b.FinishedAt
    FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertNotEquals @Expected = NULL, @Actual = @SealedAt;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @FinishedAt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
END;
GO
--[@tSQLt:NoTransaction]('Seal_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Seal_QueueBatch_trxTests.[test Seal_QueueBatch_trx enqueues the callback when every item finished before the seal]
AS
BEGIN
    DECLARE @FinishedAt DATETIME2(7);
    DECLARE @Calls INT;
    EXEC Seal_QueueBatch_trxTests.AddBatches;

    EXEC dbo.Seal_QueueBatch_trx @BatchID = 8;

    SELECT @FinishedAt = b.FinishedAt FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 8;
    SELECT @Calls = ISNULL(LEN(b.[Name]), 0) FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 8;
    EXEC tSQLt.AssertNotEquals @Expected = NULL, @Actual = @FinishedAt;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Calls;
END;
GO
--[@tSQLt:NoTransaction]('Seal_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Seal_QueueBatch_trxTests.[test Seal_QueueBatch_trx raises 735724 when the batch is sealed already]
AS
BEGIN
    EXEC Seal_QueueBatch_trxTests.AddBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735724;

    EXEC dbo.Seal_QueueBatch_trx @BatchID = 9;
END;
GO
--[@tSQLt:NoTransaction]('Seal_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Seal_QueueBatch_trxTests.[test Seal_QueueBatch_trx raises 735723 when no batch has the key]
AS
BEGIN
    EXEC Seal_QueueBatch_trxTests.AddBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735723;

    EXEC dbo.Seal_QueueBatch_trx @BatchID = 99;
END;
GO
--[@tSQLt:NoTransaction]('Seal_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Seal_QueueBatch_trxTests.[test Seal_QueueBatch_trx raises 735707 when the key is NULL]
AS
BEGIN
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Seal_QueueBatch_trx @BatchID = NULL;
END;
GO

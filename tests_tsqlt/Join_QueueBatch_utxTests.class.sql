SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Join_QueueBatch_utxTests';
GO
-- Batch 7, open, with 2 items; batch 8, sealed.
CREATE PROCEDURE Join_QueueBatch_utxTests.AddBatches
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, SealedAt)
    VALUES (7, 'AnyJobQueue', 'BatchDone', 2, NULL), (8, 'AnyJobQueue', 'BatchDone', 2, '2024-01-01T00:00:00');
END;
GO
CREATE PROCEDURE Join_QueueBatch_utxTests.[test Join_QueueBatch_utx adds the items to the Total when the batch is open]
AS
BEGIN
    DECLARE @Total INT;
    DECLARE @RetCode INT;
    EXEC Join_QueueBatch_utxTests.AddBatches;

    EXEC @RetCode = dbo.Join_QueueBatch_utx @BatchID = 7, @Items = 3, @Caller = N'test';

    SELECT @Total = b.Total FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Total;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
END;
GO
CREATE PROCEDURE Join_QueueBatch_utxTests.[test Join_QueueBatch_utx raises 735724 when the batch is sealed]
AS
BEGIN
    EXEC Join_QueueBatch_utxTests.AddBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735724;

    EXEC dbo.Join_QueueBatch_utx @BatchID = 8, @Items = 1, @Caller = N'test';
END;
GO
CREATE PROCEDURE Join_QueueBatch_utxTests.[test Join_QueueBatch_utx raises 735723 when no batch has the key]
AS
BEGIN
    EXEC Join_QueueBatch_utxTests.AddBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735723;

    EXEC dbo.Join_QueueBatch_utx @BatchID = 99, @Items = 1, @Caller = N'test';
END;
GO
CREATE PROCEDURE Join_QueueBatch_utxTests.[test Join_QueueBatch_utx raises 735707 when the count is negative]
AS
BEGIN
    EXEC Join_QueueBatch_utxTests.AddBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Join_QueueBatch_utx @BatchID = 7, @Items = -1, @Caller = N'test';
END;
GO
--[@tSQLt:NoTransaction]('Join_QueueBatch_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Join_QueueBatch_utxTests.[test Join_QueueBatch_utx raises 735702 when no transaction is open]
AS
BEGIN
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Join_QueueBatch_utx @BatchID = 7, @Items = 1, @Caller = N'test';
END;
GO
CREATE PROCEDURE Join_QueueBatch_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO

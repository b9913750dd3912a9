SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Count_QueueBatch_utxTests';
GO
-- The batches faked, and the callback spied: its own tests are dbo.Callback_QueueBatch_utx's.
CREATE PROCEDURE Count_QueueBatch_utxTests.FakeBatches
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    -- The spy marks each call on its batch: a star more in its Name (the batches start unnamed).
    EXEC tSQLt.SpyProcedure
        @ProcedureName = N'dbo.Callback_QueueBatch_utx',
        @CommandToExecute = N'UPDATE dbo.QueueBatch SET [Name] = CONCAT([Name], N''*'') WHERE BatchID = @BatchID;';
END;
GO
-- Batch @BatchID with @Total items, @Completed of them completed; sealed when @Sealed = 1.
CREATE PROCEDURE Count_QueueBatch_utxTests.AddBatch
    @BatchID INT,
    @Total INT,
    @Completed INT = 0,
    @Sealed BIT = 1
AS
BEGIN
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, Completed, SealedAt)
    VALUES (
        @BatchID,
        'SyncQueue',
        'CustomerSync',
        @Total,
        @Completed,
        CASE WHEN @Sealed = 1 THEN '2024-01-01T00:00:00' END
    );
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx adds the count of each state when items of a batch finish]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    DECLARE @RetCode INT;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 10, @Sealed = 0;
    INSERT INTO @Counts (BatchID, [Status], Items)
    VALUES
    (7, 'Completed', 2),
    (7, 'PartiallyCompleted', 1),
    (7, 'Failed', 3),
    (7, 'Cancelled', 1),
    (7, 'Terminated', 1),
    (7, 'Completed', 1);

    EXEC @RetCode = dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT
        b.Completed,
        b.PartiallyCompleted,
        b.Failed,
        b.Cancelled,
        b.Terminated,
        b.FinishedAt
    INTO #Actual
    FROM dbo.QueueBatch AS b;
    SELECT TOP (0) a.* INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected VALUES (3, 1, 3, 1, 1, NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx enqueues the callback when the last item of a sealed batch finishes]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    DECLARE @Calls INT;
    DECLARE @Finished DATETIME2(7);
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 3, @Completed = 2;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Failed', 1);

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT @Calls = ISNULL(LEN(b.[Name]), 0) FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    SELECT @Finished = b.FinishedAt FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Calls;
    EXEC tSQLt.AssertNotEquals @Expected = NULL, @Actual = @Finished;
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx enqueues no callback when the batch is not sealed]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    DECLARE @Calls INT;
    DECLARE @Finished DATETIME2(7);
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 3, @Completed = 2, @Sealed = 0;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Completed', 1);

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    SELECT @Finished = b.FinishedAt FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Finished;
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx enqueues no callback when items are left]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    DECLARE @Calls INT;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 3, @Completed = 1;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Cancelled', 1);

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
END;
GO
-- The batch finished once (its callback enqueued); a Retry took a Failed item back, which
-- now completes: the counts follow it, the callback does not come again.
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx enqueues no second callback when a retried item finishes again]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    DECLARE @Calls INT;
    DECLARE @Completed INT;
    DECLARE @Finished DATETIME2(7) = '2024-01-02T00:00:00';
    DECLARE @Actual DATETIME2(7);
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 2, @Completed = 1;
    UPDATE dbo.QueueBatch SET FinishedAt = @Finished, CallbackEnqueuedAt = @Finished;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Completed', 1);

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    SELECT
        @Completed = b.Completed,
        @Actual = b.FinishedAt
    FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Completed;
    EXEC tSQLt.AssertEquals @Expected = @Finished, @Actual = @Actual;
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx takes a Failed item back when its count is negative]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    DECLARE @Failed INT;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 3;
    UPDATE dbo.QueueBatch SET Failed = 2;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Failed', -1);

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT @Failed = b.Failed FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Failed;
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx counts each batch when items of several finish]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 5;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 8, @Total = 1;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Failed', 2), (8, 'Failed', 1);

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';

    SELECT
        b.BatchID,
        b.Failed,
        CASE WHEN b.FinishedAt IS NULL THEN 0 ELSE 1 END AS Finished,
        ISNULL(LEN(b.[Name]), 0) AS Callbacks
    INTO #Actual
    FROM dbo.QueueBatch AS b;
    SELECT TOP (0) a.* INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected VALUES (7, 2, 0, 0), (8, 1, 1, 1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx raises 735723 when the batch is gone]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (99, 'Completed', 1);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735723;

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx raises 735707 when a state is not final]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 3;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Error', 1);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';
END;
GO
-- The CHECK of dbo.QueueBatch, applied to the fake: more finished than joined is refused.
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx raises 547 when more items finish than joined]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    EXEC Count_QueueBatch_utxTests.FakeBatches;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.QueueBatch', @ConstraintName = N'QueueBatch_Counts_NoMoreThan_Total';
    EXEC Count_QueueBatch_utxTests.AddBatch @BatchID = 7, @Total = 1, @Completed = 1, @Sealed = 0;
    INSERT INTO @Counts (BatchID, [Status], Items) VALUES (7, 'Completed', 1);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';
END;
GO
--[@tSQLt:NoTransaction]('Count_QueueBatch_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Count_QueueBatch_utxTests.[test Count_QueueBatch_utx raises 735702 when no transaction is open]
AS
BEGIN
    DECLARE @Counts dbo.QueueBatchCountList;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Count_QueueBatch_utx @Counts = @Counts, @Caller = N'test';
END;
GO
CREATE PROCEDURE Count_QueueBatch_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Callback_QueueBatch_utxTests';
GO
-- The batches and the job queue SyncQueue faked (its types with one of the tests' own);
-- the callback is enqueued by the real dbo.Add_SyncQueue_utx. Batch 7 finished: 5
-- items, 2 completed, 1 partly, 1 failed, 1 cancelled, none terminated.
CREATE PROCEDURE Callback_QueueBatch_utxTests.AddFinishedBatch
    @CallbackEntityKey NVARCHAR(200) = NULL,
    @CallbackPayload NVARCHAR(MAX) = NULL,
    @CallbackEnqueuedAt DATETIME2(7) = NULL
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('AddTestJobA');
    INSERT INTO dbo.QueueBatch (
        BatchID, [Name], CallbackQueue, CallbackType, CallbackEntityKey, CallbackPayload,
        Total, Completed, PartiallyCompleted, Failed, Cancelled, Terminated, SealedAt, FinishedAt, CallbackEnqueuedAt
    )
    VALUES (
        7, N'import 42', 'SyncQueue', 'AddTestJobA', @CallbackEntityKey, @CallbackPayload,
        5, 2, 1, 1, 1, 0, '2024-01-01T00:00:00', '2024-01-01T01:00:00', @CallbackEnqueuedAt
    );
END;
GO
CREATE PROCEDURE Callback_QueueBatch_utxTests.[test Callback_QueueBatch_utx enqueues the callback job with the counts when the batch finished]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Key DATETIME2(7);
    DECLARE @Recorded DATETIME2(7);
    EXEC Callback_QueueBatch_utxTests.AddFinishedBatch
        @CallbackEntityKey = N'import-42',
        @CallbackPayload = N'{"report": "daily"}';

    EXEC @RetCode = dbo.Callback_QueueBatch_utx @BatchID = 7, @Caller = N'test';

    SELECT
        q.[Type],
        q.EntityKey,
        JSON_VALUE(q.Payload, '$.report') AS Report,
        CAST(JSON_VALUE(q.Payload, '$.batch.BatchID') AS INT) AS BatchID,
        JSON_VALUE(q.Payload, '$.batch.Name') AS [Name],
        CAST(JSON_VALUE(q.Payload, '$.batch.Total') AS INT) AS Total,
        CAST(JSON_VALUE(q.Payload, '$.batch.Completed') AS INT) AS Completed,
        CAST(JSON_VALUE(q.Payload, '$.batch.PartiallyCompleted') AS INT) AS PartiallyCompleted,
        CAST(JSON_VALUE(q.Payload, '$.batch.Failed') AS INT) AS Failed,
        CAST(JSON_VALUE(q.Payload, '$.batch.Cancelled') AS INT) AS Cancelled,
        CAST(JSON_VALUE(q.Payload, '$.batch.Terminated') AS INT) AS Terminated
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0) a.* INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected VALUES ('AddTestJobA', N'import-42', N'daily', 7, N'import 42', 5, 2, 1, 1, 1, 0);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Key = q.EnqueuedAt FROM dbo.SyncQueue AS q;
    SELECT @Recorded = b.CallbackEnqueuedAt FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @Recorded;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
END;
GO
CREATE PROCEDURE Callback_QueueBatch_utxTests.[test Callback_QueueBatch_utx names the batch as the entity when the batch names none]
AS
BEGIN
    DECLARE @EntityKey NVARCHAR(200);
    EXEC Callback_QueueBatch_utxTests.AddFinishedBatch;

    EXEC dbo.Callback_QueueBatch_utx @BatchID = 7, @Caller = N'test';

    SELECT @EntityKey = q.EntityKey FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsString @Expected = N'QueueBatch:7', @Actual = @EntityKey;
END;
GO
CREATE PROCEDURE Callback_QueueBatch_utxTests.[test Callback_QueueBatch_utx raises 735703 when the callback was enqueued already]
AS
BEGIN
    EXEC Callback_QueueBatch_utxTests.AddFinishedBatch @CallbackEnqueuedAt = '2024-01-01T01:00:00';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735703;

    EXEC dbo.Callback_QueueBatch_utx @BatchID = 7, @Caller = N'test';
END;
GO
CREATE PROCEDURE Callback_QueueBatch_utxTests.[test Callback_QueueBatch_utx raises 735723 when no batch has the key]
AS
BEGIN
    EXEC Callback_QueueBatch_utxTests.AddFinishedBatch;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735723;

    EXEC dbo.Callback_QueueBatch_utx @BatchID = 99, @Caller = N'test';
END;
GO
--[@tSQLt:NoTransaction]('Callback_QueueBatch_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Callback_QueueBatch_utxTests.[test Callback_QueueBatch_utx raises 735702 when no transaction is open]
AS
BEGIN
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Callback_QueueBatch_utx @BatchID = 7, @Caller = N'test';
END;
GO
CREATE PROCEDURE Callback_QueueBatch_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO

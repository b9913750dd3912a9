SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Open_QueueBatch_trxTests';
GO
-- The batches faked with their identity, and the job queue SyncQueue's types faked with
-- one type of the tests' own. In a NoTransaction test the fakes hold the committed rows;
-- tSQLt puts the real tables back after the test.
CREATE PROCEDURE Open_QueueBatch_trxTests.FakeBatches
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Identity = 1, @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('AddTestJobA');
END;
GO
-- Named in each NoTransaction annotation: a _trx that raised an error inside tSQLt's
-- TRY...CATCH leaves its own transaction open.
CREATE PROCEDURE Open_QueueBatch_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Open_QueueBatch_trxTests.[test Open_QueueBatch_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Open_QueueBatch_trxTests.FakeBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Open_QueueBatch_trx @CallbackQueue = 'SyncQueue', @CallbackType = 'AddTestJobA';
END;
GO
--[@tSQLt:NoTransaction]('Open_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Open_QueueBatch_trxTests.[test Open_QueueBatch_trx opens an empty batch naming its callback when the callback is a job type]
AS
BEGIN
    DECLARE @BatchID INT;
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    DECLARE @Row NVARCHAR(MAX);
    DECLARE @Expected NVARCHAR(MAX);
    EXEC Open_QueueBatch_trxTests.FakeBatches;

    EXEC @RetCode = dbo.Open_QueueBatch_trx
        @CallbackQueue = 'SyncQueue',
        @CallbackType = 'AddTestJobA',
        @CallbackEntityKey = N'import-42',
        @CallbackPayload = N'{"report": "daily"}',
        @Name = N'import 42',
        @BatchID = @BatchID OUTPUT;

    -- Values, not AssertEqualsTable: its work table would outlive a NoTransaction test.
    SELECT
        @Rows = COUNT(*),
        @Row = MAX(CONCAT_WS(
            N'|', b.BatchID, b.[Name], b.CallbackQueue, b.CallbackType, b.CallbackEntityKey, b.CallbackPayload,
            b.Total, ISNULL(CONVERT(NVARCHAR(30), b.SealedAt, 126), N'open')
        ))
    FROM dbo.QueueBatch AS b;
    SET @Expected = CONCAT_WS(
        N'|', @BatchID, N'import 42', N'SyncQueue', N'AddTestJobA', N'import-42', N'{"report": "daily"}', 0,
        N'open'
    );
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Row;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertNotEquals @Expected = NULL, @Actual = @BatchID;
END;
GO
--[@tSQLt:NoTransaction]('Open_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Open_QueueBatch_trxTests.[test Open_QueueBatch_trx raises 735707 when the callback type is not one of the queue]
AS
BEGIN
    EXEC Open_QueueBatch_trxTests.FakeBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Open_QueueBatch_trx @CallbackQueue = 'SyncQueue', @CallbackType = 'NoSuchType';
END;
GO
--[@tSQLt:NoTransaction]('Open_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Open_QueueBatch_trxTests.[test Open_QueueBatch_trx raises 735707 when the callback queue is no job queue]
AS
BEGIN
    EXEC Open_QueueBatch_trxTests.FakeBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Open_QueueBatch_trx @CallbackQueue = 'NoSuchQueue', @CallbackType = 'AddTestJobA';
END;
GO
--[@tSQLt:NoTransaction]('Open_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Open_QueueBatch_trxTests.[test Open_QueueBatch_trx raises 735707 when the payload is no JSON object]
AS
BEGIN
    EXEC Open_QueueBatch_trxTests.FakeBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Open_QueueBatch_trx
        @CallbackQueue = 'SyncQueue',
        @CallbackType = 'AddTestJobA',
        @CallbackPayload = N'[1, 2]';
END;
GO
--[@tSQLt:NoTransaction]('Open_QueueBatch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Open_QueueBatch_trxTests.[test Open_QueueBatch_trx raises 735707 when the name is blank]
AS
BEGIN
    EXEC Open_QueueBatch_trxTests.FakeBatches;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707;

    EXEC dbo.Open_QueueBatch_trx
        @CallbackQueue = 'SyncQueue',
        @CallbackType = 'AddTestJobA',
        @Name = N' ';
END;
GO

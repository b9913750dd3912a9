SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueBatchTests';
GO
-- The batches faked with one of their CHECKs applied: each test inserts a row that keeps or
-- breaks that one rule.
CREATE PROCEDURE QueueBatchTests.ArrangeConstraint
    @ConstraintName NVARCHAR(128)
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.QueueBatch', @ConstraintName = @ConstraintName;
END;
GO
CREATE PROCEDURE QueueBatchTests.[test QueueBatch refuses a row when more items finished than joined]
AS
BEGIN
    EXEC QueueBatchTests.ArrangeConstraint @ConstraintName = N'QueueBatch_Counts_NoMoreThan_Total';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, Completed, Failed)
    VALUES (1, 'AnyJobQueue', 'BatchDone', 2, 2, 1);
END;
GO
CREATE PROCEDURE QueueBatchTests.[test QueueBatch refuses a row when a count is below zero]
AS
BEGIN
    EXEC QueueBatchTests.ArrangeConstraint @ConstraintName = N'QueueBatch_Counts_NoMoreThan_Total';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, Completed, Failed)
    VALUES (1, 'AnyJobQueue', 'BatchDone', 2, 2, -1);
END;
GO
CREATE PROCEDURE QueueBatchTests.[test QueueBatch accepts a row when every item finished]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC QueueBatchTests.ArrangeConstraint @ConstraintName = N'QueueBatch_Counts_NoMoreThan_Total';

    INSERT INTO dbo.QueueBatch (
        BatchID, CallbackQueue, CallbackType, Total, Completed, PartiallyCompleted, Failed, Cancelled, Terminated
    )
    VALUES (1, 'AnyJobQueue', 'BatchDone', 5, 1, 1, 1, 1, 1);

    SELECT @Rows = COUNT(*) FROM dbo.QueueBatch;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO
CREATE PROCEDURE QueueBatchTests.[test QueueBatch refuses a finished batch when it was never sealed]
AS
BEGIN
    EXEC QueueBatchTests.ArrangeConstraint @ConstraintName = N'QueueBatch_Finishes_AfterSealing';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, SealedAt, FinishedAt)
    VALUES (1, 'AnyJobQueue', 'BatchDone', NULL, '2024-01-01T00:00:00');
END;
GO
CREATE PROCEDURE QueueBatchTests.[test QueueBatch refuses a callback payload when it is a JSON array]
AS
BEGIN
    EXEC QueueBatchTests.ArrangeConstraint @ConstraintName = N'QueueBatch_Carries_JsonObject';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, CallbackPayload)
    VALUES (1, 'AnyJobQueue', 'BatchDone', N'[1, 2]');
END;
GO
CREATE PROCEDURE QueueBatchTests.[test QueueBatch accepts a callback payload when it is a JSON object]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC QueueBatchTests.ArrangeConstraint @ConstraintName = N'QueueBatch_Carries_JsonObject';

    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, CallbackPayload)
    VALUES (1, 'AnyJobQueue', 'BatchDone', N' {"import": 42}');

    SELECT @Rows = COUNT(*) FROM dbo.QueueBatch;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO

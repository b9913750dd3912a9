SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueBatch_VTests';
GO
CREATE PROCEDURE QueueBatch_VTests.[test QueueBatch_V shows the state and what remains when batches are at every stage]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    -- 1 open; 2 sealed with items left; 3 finished; 4 finished, then an item retried.
    INSERT INTO dbo.QueueBatch (
        BatchID, CallbackQueue, CallbackType, Total, Completed, PartiallyCompleted, Failed, Cancelled, Terminated,
        SealedAt, FinishedAt, CallbackEnqueuedAt
    )
    VALUES
    (1, 'AnyJobQueue', 'BatchDone', 4, 1, 0, 0, 0, 0, NULL, NULL, NULL),
    (2, 'AnyJobQueue', 'BatchDone', 6, 1, 1, 1, 1, 1, '2024-01-01', NULL, NULL),
    (3, 'AnyJobQueue', 'BatchDone', 5, 1, 1, 1, 1, 1, '2024-01-01', '2024-01-02', '2024-01-02'),
    (4, 'AnyJobQueue', 'BatchDone', 5, 2, 1, 0, 1, 0, '2024-01-01', '2024-01-02', '2024-01-02');

    SELECT
        v.BatchID,
        v.[State],
        v.Done,
        v.Remaining
    INTO #Actual
    FROM dbo.QueueBatch_V AS v;
    SELECT TOP (0) a.* INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected VALUES
    (1, 'Open', 1, 3),
    (2, 'Sealed', 5, 1),
    (3, 'Finished', 5, 0),
    (4, 'Reopened', 4, 1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO

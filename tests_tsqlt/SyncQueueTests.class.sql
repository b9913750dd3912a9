SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'SyncQueueTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE SyncQueueTests.ArrangeConstraint
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.SyncQueue',
        @ConstraintName = N'SyncQueue_Carries_JsonPayload';
END;
GO
CREATE PROCEDURE SyncQueueTests.[test SyncQueue rejects a payload when it is not JSON]
AS
BEGIN
    EXEC SyncQueueTests.ArrangeConstraint;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.SyncQueue (EnqueuedAt, [Type], EntityKey, Payload)
    VALUES ('2024-01-01T00:00:00', 'CustomerSync', N'C-1001', N'{not json');
END;
GO
CREATE PROCEDURE SyncQueueTests.[test SyncQueue accepts a payload when it is NULL]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC SyncQueueTests.ArrangeConstraint;

    INSERT INTO dbo.SyncQueue (EnqueuedAt, [Type], EntityKey, Payload)
    VALUES ('2024-01-01T00:00:00', 'CustomerSync', N'C-1001', NULL);

    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO
CREATE PROCEDURE SyncQueueTests.[test SyncQueue accepts a payload when it is a JSON object]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC SyncQueueTests.ArrangeConstraint;

    INSERT INTO dbo.SyncQueue (EnqueuedAt, [Type], EntityKey, Payload)
    VALUES ('2024-01-01T00:00:00', 'CustomerSync', N'C-1001', N'{"a":1}');

    SELECT @Rows = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO

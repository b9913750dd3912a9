SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueSchedule_VTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE QueueSchedule_VTests.[test QueueSchedule_V shows every column of a schedule when one exists]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule';
    INSERT INTO dbo.QueueSchedule (
        [Name], [Queue], [Type], Payload, EntityKey, [Priority], GroupKey, CronExpr, IntervalSeconds, Misfire,
        CatchUpMax, NextSlotAt, LastSlotAt, LastEnqueuedAt, PausedAt, PausedBy, CreatedAt, CreatedBy
    )
    VALUES (
        N'nightly', N'SyncQueue', 'CustomerSync', N'{"full":true}', N'all', 3, N'g', '0 3 * * *', NULL, 'CatchUp',
        2, '2024-01-02T03:00:00', '2024-01-01T03:00:00', '2024-01-01T03:00:00.0000010', '2024-01-01T04:00:00',
        N'ops', '2023-12-31T00:00:00', N'admin'
    );
    SELECT TOP (0)
        v.[Name],
        v.[Queue],
        v.[Type],
        v.Payload,
        v.EntityKey,
        v.[Priority],
        v.GroupKey,
        v.CronExpr,
        v.IntervalSeconds,
        v.Misfire,
        v.CatchUpMax,
        v.NextSlotAt,
        v.LastSlotAt,
        v.LastEnqueuedAt,
        v.PausedAt,
        v.PausedBy,
        v.CreatedAt,
        v.CreatedBy
    INTO #Expected
    FROM dbo.QueueSchedule_V AS v;
    INSERT INTO #Expected
    VALUES (
        N'nightly', N'SyncQueue', 'CustomerSync', N'{"full":true}', N'all', 3, N'g', '0 3 * * *', NULL, 'CatchUp',
        2, '2024-01-02T03:00:00', '2024-01-01T03:00:00', '2024-01-01T03:00:00.0000010', '2024-01-01T04:00:00',
        N'ops', '2023-12-31T00:00:00', N'admin'
    );

    SELECT
        v.[Name],
        v.[Queue],
        v.[Type],
        v.Payload,
        v.EntityKey,
        v.[Priority],
        v.GroupKey,
        v.CronExpr,
        v.IntervalSeconds,
        v.Misfire,
        v.CatchUpMax,
        v.NextSlotAt,
        v.LastSlotAt,
        v.LastEnqueuedAt,
        v.PausedAt,
        v.PausedBy,
        v.CreatedAt,
        v.CreatedBy
    INTO #Actual
    FROM dbo.QueueSchedule_V AS v;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE QueueSchedule_VTests.[test QueueSchedule_V is empty when no schedule exists]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.QueueSchedule_V';
END;
GO

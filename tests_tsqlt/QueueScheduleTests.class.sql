SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueScheduleTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The table faked with every CHECK of dbo.QueueSchedule applied again.
CREATE PROCEDURE QueueScheduleTests.ArrangeConstraints
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule';
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.QueueSchedule', @ConstraintName = N'QueueSchedule_Has_OneCadence';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.QueueSchedule',
        @ConstraintName = N'QueueSchedule_IntervalIsWithin_OneYear';
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.QueueSchedule', @ConstraintName = N'QueueSchedule_CronIs_NotBlank';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.QueueSchedule',
        @ConstraintName = N'QueueSchedule_MisfireIs_SkipOrCatchUp';
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.QueueSchedule', @ConstraintName = N'QueueSchedule_PayloadIs_Json';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.QueueSchedule',
        @ConstraintName = N'QueueSchedule_IsPausedBy_Someone';
END;
GO
-- Inserts one schedule; each test changes one column from this valid row.
CREATE PROCEDURE QueueScheduleTests.InsertSchedule
    @CronExpr VARCHAR(200) = NULL,
    @IntervalSeconds INT = 60,
    @Misfire VARCHAR(10) = 'Skip',
    @CatchUpMax INT = NULL,
    @Payload NVARCHAR(MAX) = NULL,
    @PausedAt DATETIME2(7) = NULL,
    @PausedBy NVARCHAR(128) = NULL
AS
BEGIN
    INSERT INTO dbo.QueueSchedule (
        [Name], [Queue], [Type], Payload, EntityKey, [Priority], CronExpr, IntervalSeconds, Misfire, CatchUpMax,
        NextSlotAt, PausedAt, PausedBy, CreatedAt, CreatedBy
    )
    VALUES (
        N'beat', N'SyncQueue', 'CustomerSync', @Payload, N'beat', 0, @CronExpr, @IntervalSeconds, @Misfire,
        @CatchUpMax, '2024-01-01T00:00:00', @PausedAt, @PausedBy, '2024-01-01T00:00:00', N'tester'
    );
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule accepts a row when it is valid]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC QueueScheduleTests.ArrangeConstraints;

    EXEC QueueScheduleTests.InsertSchedule @Misfire = 'CatchUp', @CatchUpMax = 5, @Payload = N'{"a":1}';

    SELECT @Rows = COUNT(*) FROM dbo.QueueSchedule;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects a row when it has both a cron and an interval]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @CronExpr = '* * * * *', @IntervalSeconds = 60;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects a row when it has neither a cron nor an interval]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @IntervalSeconds = NULL;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects an interval when it is 0 seconds]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @IntervalSeconds = 0;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects a cron expression when it is blank]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @CronExpr = '  ', @IntervalSeconds = NULL;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects CatchUp when it has no CatchUpMax]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @Misfire = 'CatchUp', @CatchUpMax = NULL;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects Skip when it has a CatchUpMax]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @Misfire = 'Skip', @CatchUpMax = 3;
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects a misfire policy when it is unknown]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @Misfire = 'Never';
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects a payload when it is not JSON]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @Payload = N'{not json';
END;
GO
CREATE PROCEDURE QueueScheduleTests.[test QueueSchedule rejects a pause when it names nobody]
AS
BEGIN
    EXEC QueueScheduleTests.ArrangeConstraints;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    EXEC QueueScheduleTests.InsertSchedule @PausedAt = '2024-01-02T00:00:00', @PausedBy = NULL;
END;
GO

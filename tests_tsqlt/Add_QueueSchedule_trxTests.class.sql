SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_QueueSchedule_trxTests';
GO
-- dbo.Add_QueueSchedule_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked tables back after each).
-- The schedules, faked, and SyncQueue's types with one of the tests' own.
CREATE PROCEDURE Add_QueueSchedule_trxTests.FakeTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('ScheduleTestJob');
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_QueueSchedule_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Adds a schedule, asserts the error it raised and that nothing was added.
CREATE PROCEDURE Add_QueueSchedule_trxTests.AssertRefused
    @Expected INT,
    @Queue SYSNAME = N'SyncQueue',
    @Type VARCHAR(50) = 'ScheduleTestJob',
    @CronExpr VARCHAR(200) = NULL,
    @IntervalSeconds INT = 60,
    @Misfire VARCHAR(10) = 'Skip',
    @CatchUpMax INT = NULL,
    @Payload NVARCHAR(MAX) = NULL
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    BEGIN TRY
        EXEC dbo.Add_QueueSchedule_trx
            @Name = N'beat',
            @Queue = @Queue,
            @Type = @Type,
            @Payload = @Payload,
            @CronExpr = @CronExpr,
            @IntervalSeconds = @IntervalSeconds,
            @Misfire = @Misfire,
            @CatchUpMax = @CatchUpMax;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    SELECT @Rows = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND CreatedBy <> N'before';
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'nothing must be added';
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Add_QueueSchedule_trxTests.FakeTables;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Add_QueueSchedule_trx
        @Name = N'beat',
        @Queue = N'SyncQueue',
        @Type = 'ScheduleTestJob',
        @IntervalSeconds = 60;
END;
GO
--[@tSQLt:NoTransaction]('Add_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx adds an interval schedule from now when it is valid]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Before DATETIME2(7) = DATEADD(SECOND, -1, SYSUTCDATETIME());
    DECLARE @Matching INT;
    EXEC Add_QueueSchedule_trxTests.FakeTables;

    EXEC @RetCode = dbo.Add_QueueSchedule_trx
        @Name = N'beat',
        @Queue = N'SyncQueue',
        @Type = 'ScheduleTestJob',
        @Payload = N'{"a":1}',
        @IntervalSeconds = 60;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- the defaults: EntityKey the name, Priority 0, Skip, the first slot now to the second, the login
    SELECT @Matching = COUNT(*) FROM dbo.QueueSchedule AS s
    WHERE
        s.[Name] = N'beat' AND s.[Queue] = N'SyncQueue' AND s.[Type] = 'ScheduleTestJob'
        AND s.Payload = N'{"a":1}' AND s.EntityKey = N'beat' AND s.[Priority] = 0 AND s.GroupKey IS NULL
        AND s.CronExpr IS NULL AND s.IntervalSeconds = 60 AND s.Misfire = 'Skip' AND s.CatchUpMax IS NULL
        AND s.NextSlotAt >= @Before AND s.NextSlotAt <= SYSUTCDATETIME() AND DATEPART(NANOSECOND, s.NextSlotAt) = 0
        AND s.PausedAt IS NULL AND s.CreatedBy = ORIGINAL_LOGIN();
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching;
END;
GO
--[@tSQLt:NoTransaction]('Add_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx adds a cron schedule at the given slot when it is valid]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Matching INT;
    EXEC Add_QueueSchedule_trxTests.FakeTables;

    EXEC @RetCode = dbo.Add_QueueSchedule_trx
        @Name = N'nightly',
        @Queue = N'SyncQueue',
        @Type = 'ScheduleTestJob',
        @EntityKey = N'all',
        @Priority = 5,
        @CronExpr = '0 3 * * *',
        @Misfire = 'CatchUp',
        @CatchUpMax = 2,
        @NextSlotAt = '2030-01-01T03:00:00',
        @CreatedBy = N'ops';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    SELECT @Matching = COUNT(*) FROM dbo.QueueSchedule AS s
    WHERE
        s.[Name] = N'nightly' AND s.EntityKey = N'all' AND s.[Priority] = 5 AND s.CronExpr = '0 3 * * *'
        AND s.IntervalSeconds IS NULL AND s.Misfire = 'CatchUp' AND s.CatchUpMax = 2
        AND s.NextSlotAt = '2030-01-01T03:00:00' AND s.CreatedBy = N'ops';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching;
END;
GO
--[@tSQLt:NoTransaction]('Add_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx raises 735721 when the name is taken]
AS
BEGIN
    EXEC Add_QueueSchedule_trxTests.FakeTables;
    INSERT INTO dbo.QueueSchedule ([Name], [Queue], [Type], EntityKey, IntervalSeconds, Misfire, NextSlotAt, CreatedBy)
    VALUES (N'beat', N'SyncQueue', 'ScheduleTestJob', N'beat', 5, 'Skip', '2024-01-01T00:00:00', N'before');

    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735721;
END;
GO
--[@tSQLt:NoTransaction]('Add_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx raises 735722 when the queue is custom]
AS
BEGIN
    EXEC Add_QueueSchedule_trxTests.FakeTables;

    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735722, @Queue = N'Notification', @Type = 'ResetPassword';
END;
GO
--[@tSQLt:NoTransaction]('Add_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx raises 735722 when the type is not one of the queue types]
AS
BEGIN
    EXEC Add_QueueSchedule_trxTests.FakeTables;

    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735722, @Type = 'NoSuchJob';
END;
GO
--[@tSQLt:NoTransaction]('Add_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_QueueSchedule_trxTests.[test Add_QueueSchedule_trx raises 735707 when a parameter is invalid]
AS
BEGIN
    EXEC Add_QueueSchedule_trxTests.FakeTables;

    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @CronExpr = '* * * * *';
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @IntervalSeconds = NULL;
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @IntervalSeconds = 0;
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @IntervalSeconds = 31622401;
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @Misfire = 'Never';
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @Misfire = 'CatchUp';
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @Misfire = 'CatchUp', @CatchUpMax = 1001;
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @CatchUpMax = 3;
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @Payload = N'{not json';
    -- a cron expression needs its first slot, which the caller computes
    EXEC Add_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @CronExpr = '0 3 * * *', @IntervalSeconds = NULL;
END;
GO

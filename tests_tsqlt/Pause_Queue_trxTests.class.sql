SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Pause_Queue_trxTests';
GO
-- A _trx refuses tSQLt's own transaction (735701), so the tests that pause run
-- NoTransaction, on a fake dbo.QueueControl that holds their committed rows (tSQLt puts
-- the real table back after the test). The job types stay real: the deployed rows of
-- dbo.<Queue>Type.
CREATE PROCEDURE Pause_Queue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Calls the pause and gives back the number of the error it raised (NULL: none).
CREATE PROCEDURE Pause_Queue_trxTests.ErrorOf
    @Queue NVARCHAR(128),
    @Type VARCHAR(400) = NULL,
    @PauseReason NVARCHAR(MAX) = NULL,
    @PausedBy NVARCHAR(MAX) = NULL,
    @ErrorNumber INT OUTPUT
AS
BEGIN
    SET @ErrorNumber = NULL;
    BEGIN TRY
        EXEC dbo.Pause_Queue_trx
            @Queue = @Queue,
            @Type = @Type,
            @PauseReason = @PauseReason,
            @PausedBy = @PausedBy;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Pause_Queue_trxTests.[test Pause_Queue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Pause_Queue_trx @Queue = N'Notification', @PauseReason = N'maintenance';
END;
GO
--[@tSQLt:NoTransaction]('Pause_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_Queue_trxTests.[test Pause_Queue_trx records the login when and why when it pauses each queue]
AS
BEGIN
    DECLARE @Before DATETIME2(7) = SYSUTCDATETIME();
    DECLARE @RetCode INT;
    DECLARE @Paused INT;
    DECLARE @Late INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;

    EXEC @RetCode = dbo.Pause_Queue_trx @Queue = N'Notification', @PauseReason = N'the relay is down';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'Notification: return code';
    EXEC @RetCode = dbo.Pause_Queue_trx @Queue = N'SyncQueue', @PauseReason = N'the relay is down';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'SyncQueue: return code';

    SELECT
        @Paused = COUNT(*),
        @Late = COUNT(CASE WHEN c.PausedAt < @Before OR c.PausedAt > SYSUTCDATETIME() THEN 1 END)
    FROM dbo.QueueControl AS c
    WHERE
        c.[Type] = ''
        AND c.IsPaused = 1
        AND c.PausedBy = ORIGINAL_LOGIN()
        AND c.PauseReason = N'the relay is down'
        AND c.ResumedAt IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Paused, @Message = N'queues paused';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Late, @Message = N'PausedAt is the time of the call, UTC';
END;
GO
--[@tSQLt:NoTransaction]('Pause_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_Queue_trxTests.[test Pause_Queue_trx pauses one type and records the name given when PausedBy is given]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    -- Paused before and resumed: a new pause clears the resume.
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, ResumedBy, ResumedAt)
    VALUES (N'SyncQueue', 'CustomerSync', 0, N'ann', '2024-01-01');

    EXEC dbo.Pause_Queue_trx
        @Queue = N'SyncQueue',
        @Type = 'CustomerSync',
        @PauseReason = N'quota spent',
        @PausedBy = N'bob@example.com';

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl AS c
    WHERE
        c.[Queue] = N'SyncQueue'
        AND c.[Type] = 'CustomerSync'
        AND c.IsPaused = 1
        AND c.PausedBy = N'bob@example.com'
        AND c.PauseReason = N'quota spent'
        AND c.ResumedBy IS NULL
        AND c.ResumedAt IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'the type''s row';
    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'no row for the queue itself';
END;
GO
--[@tSQLt:NoTransaction]('Pause_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_Queue_trxTests.[test Pause_Queue_trx raises 735717 and writes nothing when the queue or type is unknown]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;

    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = N'NoSuchQueue', @PauseReason = N'why', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735717, @Actual = @ErrorNumber, @Message = N'an unknown queue';
    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = NULL, @PauseReason = N'why', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735717, @Actual = @ErrorNumber, @Message = N'a NULL queue';
    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @Type = 'NoSuchType', @PauseReason = N'why', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735717, @Actual = @ErrorNumber, @Message = N'an unknown type';
    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @Type = '', @PauseReason = N'why', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735717, @Actual = @ErrorNumber, @Message = N'a blank type';

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows written';
END;
GO
--[@tSQLt:NoTransaction]('Pause_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_Queue_trxTests.[test Pause_Queue_trx raises 735718 and writes nothing when the reason or name is blank or long]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    DECLARE @Long NVARCHAR(MAX) = REPLICATE(CAST(N'x' AS NVARCHAR(MAX)), 401);
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;

    EXEC Pause_Queue_trxTests.ErrorOf @Queue = N'Notification', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735718, @Actual = @ErrorNumber, @Message = N'no reason';
    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @PauseReason = N'  ', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735718, @Actual = @ErrorNumber, @Message = N'a blank reason';
    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @PauseReason = @Long, @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735718, @Actual = @ErrorNumber, @Message = N'a reason of 401 characters';
    EXEC Pause_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @PauseReason = N'why', @PausedBy = N'', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735718, @Actual = @ErrorNumber, @Message = N'a blank PausedBy';

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows written';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Pause_Queue_trxTests.[test Pause_Queue_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'Queue, Type, IsPaused, PausedBy, PausedAt, PauseReason';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Pause_Queue_trx @Queue = N''Notification'', @PauseReason = N''why'';',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

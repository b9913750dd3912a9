SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Limit_Queue_trxTests';
GO
-- As in Pause_Queue_trxTests: NoTransaction tests on a fake dbo.QueueControl.
CREATE PROCEDURE Limit_Queue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Calls the limit and gives back the number of the error it raised (NULL: none).
CREATE PROCEDURE Limit_Queue_trxTests.ErrorOf
    @Queue NVARCHAR(128),
    @Type VARCHAR(400) = NULL,
    @Limit INT = NULL,
    @LimitSetBy NVARCHAR(MAX) = NULL,
    @ErrorNumber INT OUTPUT
AS
BEGIN
    SET @ErrorNumber = NULL;
    BEGIN TRY
        EXEC dbo.Limit_Queue_trx
            @Queue = @Queue,
            @Type = @Type,
            @Limit = @Limit,
            @LimitSetBy = @LimitSetBy;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Limit_Queue_trxTests.[test Limit_Queue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Limit_Queue_trx @Queue = N'Notification', @Limit = 2;
END;
GO
--[@tSQLt:NoTransaction]('Limit_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Limit_Queue_trxTests.[test Limit_Queue_trx sets the group limit of each queue and the limit of its first type when both are called]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    -- A paused type keeps its pause when its limit is set.
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason)
    VALUES (N'Notification', 'ResetPassword', 1, N'ann', '2024-01-01', N'quota');

    EXEC dbo.Limit_Queue_trx @Queue = N'Notification', @Limit = 2, @LimitSetBy = N'bob';
    EXEC dbo.Limit_Queue_trx @Queue = N'Notification', @Type = 'ResetPassword', @Limit = 3, @LimitSetBy = N'bob';
    EXEC dbo.Limit_Queue_trx @Queue = N'SyncQueue', @Limit = 2, @LimitSetBy = N'bob';
    EXEC dbo.Limit_Queue_trx @Queue = N'SyncQueue', @Type = 'CustomerSync', @Limit = 3, @LimitSetBy = N'bob';

    -- Compared as counts: AssertEqualsTable leaves a work table behind in a NoTransaction test.
    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl AS c
    WHERE
        (
            c.[Queue] = N'Notification' AND c.[Type] = '' AND c.IsPaused = 0 AND c.TypeLimit IS NULL
            AND c.GroupLimit = 2 AND c.LimitSetBy = N'bob'
        )
        OR (
            c.[Queue] = N'Notification' AND c.[Type] = 'ResetPassword' AND c.IsPaused = 1
            AND c.TypeLimit = 3 AND c.GroupLimit IS NULL AND c.LimitSetBy = N'bob'
        )
        OR
        (
            c.[Queue] = N'SyncQueue' AND c.[Type] = '' AND c.IsPaused = 0 AND c.TypeLimit IS NULL
            AND c.GroupLimit = 2 AND c.LimitSetBy = N'bob'
        )
        OR (
            c.[Queue] = N'SyncQueue' AND c.[Type] = 'CustomerSync' AND c.IsPaused = 0
            AND c.TypeLimit = 3 AND c.GroupLimit IS NULL AND c.LimitSetBy = N'bob'
        );
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Rows, @Message = N'rows as set';
    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl;
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Rows, @Message = N'rows in all';
END;
GO
--[@tSQLt:NoTransaction]('Limit_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Limit_Queue_trxTests.[test Limit_Queue_trx removes the limit of a type and records the login when Limit is NULL]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    INSERT INTO dbo.QueueControl ([Queue], [Type], TypeLimit, LimitSetBy, LimitSetAt)
    VALUES (N'SyncQueue', 'CustomerSync', 5, N'ann', '2024-01-01');

    EXEC dbo.Limit_Queue_trx @Queue = N'SyncQueue', @Type = 'CustomerSync', @Limit = NULL;

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl AS c
    WHERE c.TypeLimit IS NULL AND c.LimitSetBy = ORIGINAL_LOGIN() AND c.LimitSetAt > '2024-01-01';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'the limit removed';
END;
GO
--[@tSQLt:NoTransaction]('Limit_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Limit_Queue_trxTests.[test Limit_Queue_trx raises 735719 and writes nothing when the limit is below 1 or too large]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;

    EXEC Limit_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @Type = 'ResetPassword', @Limit = 0,
        @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735719, @Actual = @ErrorNumber, @Message = N'a type limit of 0';
    EXEC Limit_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @Limit = -1, @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735719, @Actual = @ErrorNumber, @Message = N'a group limit of -1';
    EXEC Limit_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @Limit = 32768, @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735719, @Actual = @ErrorNumber, @Message = N'a limit of 32768';

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows written';
END;
GO
--[@tSQLt:NoTransaction]('Limit_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Limit_Queue_trxTests.[test Limit_Queue_trx raises 735717 and 735718 and writes nothing when the input is bad]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;

    EXEC Limit_Queue_trxTests.ErrorOf @Queue = N'NoSuchQueue', @Limit = 1, @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735717, @Actual = @ErrorNumber, @Message = N'an unknown queue';
    EXEC Limit_Queue_trxTests.ErrorOf
        @Queue = N'Notification', @Limit = 1, @LimitSetBy = N'', @ErrorNumber = @ErrorNumber OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = 735718, @Actual = @ErrorNumber, @Message = N'a blank LimitSetBy';

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
CREATE PROCEDURE Limit_Queue_trxTests.[test Limit_Queue_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'Queue, Type, TypeLimit, GroupLimit, LimitSetBy, LimitSetAt';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Limit_Queue_trx @Queue = N''Notification'', @Limit = 2;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

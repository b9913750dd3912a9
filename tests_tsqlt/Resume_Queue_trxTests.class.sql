SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Resume_Queue_trxTests';
GO
-- As in Pause_Queue_trxTests: NoTransaction tests on a fake dbo.QueueControl.
CREATE PROCEDURE Resume_Queue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Every queue paused, and its first type paused too, by ann on 2024-01-01.
CREATE PROCEDURE Resume_Queue_trxTests.FakeControls
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason)
    VALUES
    (N'Notification', '', 1, N'ann', '2024-01-01', N'deploy'),
    (N'Notification', 'ResetPassword', 1, N'ann', '2024-01-01', N'quota'),
    (N'SyncQueue', '', 1, N'ann', '2024-01-01', N'deploy'),
    (N'SyncQueue', 'CustomerSync', 1, N'ann', '2024-01-01', N'quota');
END;
GO
CREATE PROCEDURE Resume_Queue_trxTests.[test Resume_Queue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Resume_Queue_trxTests.FakeControls;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Resume_Queue_trx @Queue = N'Notification';
END;
GO
--[@tSQLt:NoTransaction]('Resume_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Resume_Queue_trxTests.[test Resume_Queue_trx resumes each queue and keeps its types paused when Type is NULL]
AS
BEGIN
    DECLARE @Before DATETIME2(7) = SYSUTCDATETIME();
    DECLARE @RetCode INT;
    DECLARE @Resumed INT;
    DECLARE @TypesPaused INT;
    EXEC Resume_Queue_trxTests.FakeControls;

    EXEC @RetCode = dbo.Resume_Queue_trx @Queue = N'Notification';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'Notification: return code';
    EXEC @RetCode = dbo.Resume_Queue_trx @Queue = N'SyncQueue';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'SyncQueue: return code';

    -- The last pause is kept: who paused it, when and why.
    SELECT @Resumed = COUNT(*)
    FROM dbo.QueueControl AS c
    WHERE
        c.[Type] = ''
        AND c.IsPaused = 0
        AND c.ResumedBy = ORIGINAL_LOGIN()
        AND c.ResumedAt BETWEEN @Before AND SYSUTCDATETIME()
        AND c.PausedBy = N'ann'
        AND c.PauseReason = N'deploy';
    SELECT @TypesPaused = COUNT(*)
    FROM dbo.QueueControl AS c
    WHERE c.[Type] <> '' AND c.IsPaused = 1 AND c.ResumedAt IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Resumed, @Message = N'queues resumed';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @TypesPaused, @Message = N'types still paused';
END;
GO
--[@tSQLt:NoTransaction]('Resume_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Resume_Queue_trxTests.[test Resume_Queue_trx records the name given and changes nothing else when a type is resumed twice]
AS
BEGIN
    DECLARE @ResumedBy NVARCHAR(128);
    DECLARE @ResumedAt DATETIME2(7);
    DECLARE @Again DATETIME2(7);
    EXEC Resume_Queue_trxTests.FakeControls;

    EXEC dbo.Resume_Queue_trx
        @Queue = N'SyncQueue', @Type = 'CustomerSync', @ResumedBy = N'bob';
    SELECT
        @ResumedBy = c.ResumedBy,
        @ResumedAt = c.ResumedAt
    FROM dbo.QueueControl AS c
    WHERE c.[Queue] = N'SyncQueue' AND c.[Type] = 'CustomerSync' AND c.IsPaused = 0;
    EXEC dbo.Resume_Queue_trx
        @Queue = N'SyncQueue', @Type = 'CustomerSync', @ResumedBy = N'carol';
    SELECT @Again = c.ResumedAt
    FROM dbo.QueueControl AS c
    WHERE c.[Queue] = N'SyncQueue' AND c.[Type] = 'CustomerSync' AND c.ResumedBy = N'bob';

    EXEC tSQLt.AssertEqualsString @Expected = N'bob', @Actual = @ResumedBy, @Message = N'ResumedBy';
    EXEC tSQLt.AssertEquals @Expected = @ResumedAt, @Actual = @Again, @Message = N'the second resume changes nothing';
END;
GO
--[@tSQLt:NoTransaction]('Resume_Queue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Resume_Queue_trxTests.[test Resume_Queue_trx raises 735717 and 735718 and resumes nothing when the input is bad]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Paused INT;
    EXEC Resume_Queue_trxTests.FakeControls;

    BEGIN TRY
        EXEC dbo.Resume_Queue_trx @Queue = N'Notification', @Type = 'NoSuchType';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735717, @Actual = @ErrorNumber, @Message = N'an unknown type';
    SET @ErrorNumber = NULL;
    BEGIN TRY
        EXEC dbo.Resume_Queue_trx @Queue = N'Notification', @ResumedBy = N' ';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735718, @Actual = @ErrorNumber, @Message = N'a blank ResumedBy';

    SELECT @Paused = COUNT(*)
    FROM dbo.QueueControl AS c
    WHERE c.IsPaused = 1;
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Paused, @Message = N'still paused';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Resume_Queue_trxTests.[test Resume_Queue_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'Queue, Type, IsPaused, ResumedBy, ResumedAt';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Resume_Queue_trx @Queue = N''Notification'';',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

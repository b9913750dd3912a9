SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Reschedule_Notification_trxTests';
GO
-- Every table the control writes (the attempt history included) and its result
-- row (dbo.Worker_Notification_V) reads. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
-- dbo.QueueStatus and dbo.QueueTransition stay real. The result row cannot be
-- read here: a _trx refuses INSERT ... EXEC (it would run inside the INSERT's
-- transaction), so the tests assert on the row left in the queue; the rules of
-- each move are dbo.Move_Notification_utx's tests.
CREATE PROCEDURE Reschedule_Notification_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
-- The item under test: key 2024-01-01T00:00:00, token five seconds later, due at
-- 01:00 that day. A Pending item, never claimed.
CREATE PROCEDURE Reschedule_Notification_trxTests.AddItem
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    INSERT INTO dbo.Notification (
        EnqueuedAt,
        [Type],
        [Status],
        [Step],
        AttemptNum,
        Response,
        Error,
        StartedAt,
        Duration,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        GroupKey,
        DedupKey,
        LockedBy,
        LeaseUntil
    )
    VALUES (
        @Key,
        'ResetPassword',
        'Pending',
        NULL,
        0,
        N'',
        N'',
        NULL,
        NULL,
        '2024-01-01T01:00:00',
        @Token,
        0,
        NULL,
        NULL,
        NULL,
        NULL
    );
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Reschedule_Notification_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Reschedule_Notification_trxTests.[test Reschedule_Notification_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @NewDueAt DATETIME2(7) = DATEADD(DAY, 1, SYSUTCDATETIME());
    EXEC Reschedule_Notification_trxTests.FakeQueue;
    EXEC Reschedule_Notification_trxTests.AddItem;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Reschedule_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @ScheduledFor = @NewDueAt;
END;
GO
--[@tSQLt:NoTransaction]('Reschedule_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Reschedule_Notification_trxTests.[test Reschedule_Notification_trx reschedules the item and commits when no transaction is open]
AS
BEGIN
    -- A Pending item stays Pending, due at the given time.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @NewDueAt DATETIME2(7) = DATEADD(DAY, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Reschedule_Notification_trxTests.FakeQueue;
    EXEC Reschedule_Notification_trxTests.AddItem;

    EXEC @RetCode = dbo.Reschedule_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @ScheduledFor = @NewDueAt;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @ScheduledFor = q.ScheduledFor,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = @NewDueAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'AttemptNum is kept';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the change must move UpdatedAt forward';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Reschedule_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Reschedule_Notification_trxTests.[test Reschedule_Notification_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @NewDueAt DATETIME2(7) = DATEADD(DAY, 1, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Reschedule_Notification_trxTests.FakeQueue;
    EXEC Reschedule_Notification_trxTests.AddItem;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Reschedule_Notification_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @ScheduledFor = @NewDueAt;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Reschedule_Notification_trxTests.[test Reschedule_Notification_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'EnqueuedAt, UpdatedAt, Status, ScheduledFor';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Reschedule_Notification_trx @EnqueuedAt = NULL, @ScheduledFor = NULL;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

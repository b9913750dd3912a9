SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Pause_Notification_trxTests';
GO
-- Every table the control writes (the attempt history included) and its result
-- row (dbo.Worker_Notification_V) reads. In a NoTransaction test the fakes hold
-- the committed rows; tSQLt puts the real tables back after the test.
-- dbo.QueueStatus and dbo.QueueTransition stay real. The result row cannot be
-- read here: a _trx refuses INSERT ... EXEC (it would run inside the INSERT's
-- transaction), so the tests assert on the row left in the queue; the rules of
-- each move are dbo.Move_Notification_utx's tests.
CREATE PROCEDURE Pause_Notification_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Pause_Notification_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Pause_Notification_trxTests.[test Pause_Notification_trx raises 50001 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @DueAt DATETIME2(7) = '2024-03-01T09:00:00';
    EXEC Pause_Notification_trxTests.FakeQueue;
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
        @DueAt,
        @Token,
        NULL,
        NULL
    );
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Pause_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token;
END;
GO
--[@tSQLt:NoTransaction]('Pause_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_Notification_trxTests.[test Pause_Notification_trx pauses the item and commits when no transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @DueAt DATETIME2(7) = '2024-03-01T09:00:00';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Pause_Notification_trxTests.FakeQueue;
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
        @DueAt,
        @Token,
        NULL,
        NULL
    );

    EXEC @RetCode = dbo.Pause_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @ScheduledFor = n.ScheduledFor,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Paused', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = @DueAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor is kept';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the change must move UpdatedAt forward';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Pause_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_Notification_trxTests.[test Pause_Notification_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @DueAt DATETIME2(7) = '2024-03-01T09:00:00';
    EXEC Pause_Notification_trxTests.FakeQueue;
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
        @DueAt,
        @Token,
        NULL,
        NULL
    );

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Pause_Notification_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
END;
GO

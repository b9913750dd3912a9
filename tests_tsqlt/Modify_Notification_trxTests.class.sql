SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_Notification_trxTests';
GO
-- Every table the report writes (the attempt history included) and its result
-- row (dbo.Worker_Notification_V) reads, and the settings faked empty so that
-- notification.maxAttempts is 3. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
CREATE PROCEDURE Modify_Notification_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_Notification_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx raises 50001 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Modify_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed';
END;
GO
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx commits the outcome when a processing item reports Completed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    EXEC @RetCode = dbo.Modify_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'250 2.0.0 OK';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = n.[Status],
        @Response = n.Response,
        @Duration = n.Duration,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'250 2.0.0 OK', @Actual = @Response, @Message = N'Response';
    IF @Duration IS NULL OR @Duration < 0
        EXEC tSQLt.Fail @Message0 = N'the ended attempt must record its Duration';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the report must move UpdatedAt forward';
END;
GO
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx raises 50005 and changes nothing when the token is stale]
AS
BEGIN
    -- The procedure would return 1, but tSQLt runs every test inside
    -- TRY...CATCH: the RAISERROR moves control to the CATCH below before the
    -- procedure's EXIT_TRANSACTION rollback, so its transaction is still open
    -- here and the test rolls it back before reading the row.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StaleToken DATETIME2(7) = '2024-03-01T08:00:04';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    BEGIN TRY
        EXEC dbo.Modify_Notification_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @StaleToken,
            @Status = 'Completed',
            @Response = N'250 2.0.0 OK';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- the row as the failed call left it, seen from inside the transaction it left open
    SELECT
        @Status = n.[Status],
        @Response = n.Response,
        @Duration = n.Duration,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50005, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Response, @Message = N'Response';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Duration, @Message = N'Duration';
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    EXEC Modify_Notification_trxTests.FakeQueue;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Modify_Notification_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_Notification_trxTests';
GO
-- Every table the claim and its result row (dbo.Worker_Notification_V) read,
-- and the settings faked empty so that notification.maxAttempts is 3. In a
-- NoTransaction test the fakes hold the committed rows; tSQLt puts the real
-- tables back after the test.
CREATE PROCEDURE Next_Notification_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
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
CREATE PROCEDURE Next_Notification_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Next_Notification_trxTests.[test Next_Notification_trx raises 50001 when a transaction is open]
AS
BEGIN
    EXEC Next_Notification_trxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Next_Notification_trx;
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_trxTests.[test Next_Notification_trx claims and commits the due item when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Next_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES (
        '2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:00:01', '2024-01-01T00:00:01'
    );

    EXEC @RetCode = dbo.Next_Notification_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= '2024-01-01T00:00:01'
        EXEC tSQLt.Fail @Message0 = N'the claim must move UpdatedAt forward';
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_trxTests.[test Next_Notification_trx returns 0 and changes nothing when nothing is due]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Next_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 0, NULL, @Later, '2024-01-01T00:00:01');

    EXEC @RetCode = dbo.Next_Notification_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'AttemptNum';
    IF @UpdatedAt IS NULL OR @UpdatedAt <> '2024-01-01T00:00:01'
        EXEC tSQLt.Fail @Message0 = N'UpdatedAt must not change';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Next_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_trxTests.[test Next_Notification_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Next_Notification_trxTests.FakeQueue;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Next_Notification_trx;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
END;
GO

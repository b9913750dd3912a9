SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_Notification_ResetPassword_trxTests';
GO
-- The four tables an enqueue writes, faked with their defaults. In a
-- NoTransaction test the fakes hold the committed rows, and tSQLt puts the
-- real tables back after the test.
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.FakeNotificationTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Add_Notification_ResetPassword_trx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com';
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx commits the notification when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Type VARCHAR(50);
    DECLARE @Status VARCHAR(20);
    DECLARE @SubtypeKey DATETIME2(7);
    DECLARE @EmailKey DATETIME2(7);
    DECLARE @SmsKey DATETIME2(7);
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_trx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @PhoneNumber = '+14155550123';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT @Rows = COUNT(*) FROM dbo.Notification;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'rows in dbo.Notification';
    SELECT
        @EnqueuedAt = n.EnqueuedAt,
        @Type = n.[Type],
        @Status = n.[Status]
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsString @Expected = 'ResetPassword', @Actual = @Type, @Message = N'Type';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    SELECT @SubtypeKey = rp.EnqueuedAt
    FROM dbo.Notification_ResetPassword AS rp
    WHERE rp.UserID = 42 AND rp.Username = N'alice' AND rp.OTP = 'A1B2C3';
    SELECT @EmailKey = e.EnqueuedAt
    FROM dbo.Notification_Email AS e
    WHERE e.EmailTo = N'alice@example.com';
    SELECT @SmsKey = s.EnqueuedAt
    FROM dbo.Notification_Sms AS s
    WHERE s.PhoneNumber = '+14155550123';
    EXEC tSQLt.AssertEquals @Expected = @EnqueuedAt, @Actual = @SubtypeKey, @Message = N'ResetPassword row';
    EXEC tSQLt.AssertEquals @Expected = @EnqueuedAt, @Actual = @EmailKey, @Message = N'e-mail row';
    EXEC tSQLt.AssertEquals @Expected = @EnqueuedAt, @Actual = @SmsKey, @Message = N'SMS row';
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx raises 735707 and leaves nothing when OTP is invalid]
AS
BEGIN
    -- The procedure would return 1 here, but tSQLt runs every test inside
    -- TRY...CATCH: the RAISERROR moves control to the CATCH below before the
    -- RETURN, and before the procedure's own rollback, so the test rolls back.
    DECLARE @ErrorNumber INT;
    DECLARE @RowsInTransaction INT;
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_trx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1!',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- what the failed call wrote, seen from inside the transaction it left open
    SET
        @RowsInTransaction = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction, @Message = N'rows written';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_trx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx commits the priority and group and dedup key when they are given]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Priority INT;
    DECLARE @GroupKey NVARCHAR(100);
    DECLARE @DedupKey NVARCHAR(200);
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_trx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @Priority = 7,
        @GroupKey = N'user:42',
        @DedupKey = N'reset:42:A1B2C3';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Priority = n.[Priority],
        @GroupKey = n.GroupKey,
        @DedupKey = n.DedupKey
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEquals @Expected = 7, @Actual = @Priority, @Message = N'Priority';
    EXEC tSQLt.AssertEqualsString @Expected = N'user:42', @Actual = @GroupKey, @Message = N'GroupKey';
    EXEC tSQLt.AssertEqualsString @Expected = N'reset:42:A1B2C3', @Actual = @DedupKey, @Message = N'DedupKey';
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx adds no rows and commits when the DedupKey is on an unfinished item]
AS
BEGIN
    -- The key it returns is the first item's (the _utx tests check it): a _trx
    -- refuses INSERT ... EXEC, so its result row cannot be read here.
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @RowsBefore INT;
    DECLARE @RowsAfter INT;
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;
    EXEC dbo.Add_Notification_ResetPassword_trx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @DedupKey = N'reset:42';
    SET
        @RowsBefore = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_trx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'D4E5F6',
        @EmailTo = N'alice@example.com',
        @DedupKey = N'reset:42';
    SET @TranCount = @@TRANCOUNT;

    SET
        @RowsAfter = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'a duplicate is no error';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @RowsBefore, @Message = N'rows after the first enqueue';
    EXEC tSQLt.AssertEquals @Expected = @RowsBefore, @Actual = @RowsAfter, @Message = N'rows added by the duplicate';
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx raises 735707 and leaves nothing when Priority is out of range]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @RowsInTransaction INT;
    EXEC Add_Notification_ResetPassword_trxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_trx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @Priority = -32769;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- what the failed call wrote, seen from inside the transaction it left open
    SET
        @RowsInTransaction = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction, @Message = N'rows written';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it; the enqueue's EXECs of sp_getapplock say WITH RESULT SETS NONE so
-- that the analysis need not enter that extended procedure (the build's check describable).
CREATE PROCEDURE Add_Notification_ResetPassword_trxTests.[test Add_Notification_ResetPassword_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Add_Notification_ResetPassword_trx @UserID = 1, @Username = N''ada'', @OTP = ''123456'';',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = N'EnqueuedAt', @Actual = @Columns;
END;
GO

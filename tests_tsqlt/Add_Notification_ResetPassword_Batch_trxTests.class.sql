SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_Notification_ResetPassword_Batch_trxTests';
GO
-- The four tables an enqueue writes, faked with their defaults.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.FakeNotificationTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.[test Add_Notification_ResetPassword_Batch_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_trxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    VALUES (1, 11, N'ada', 'A1B2C3', N'ada@example.com');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.[test Add_Notification_ResetPassword_Batch_trx enqueues and commits the notifications when they are valid]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @Channels INT;
    EXEC Add_Notification_ResetPassword_Batch_trxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, PhoneNumber)
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL),
    (2, 12, N'bob', 'B1B2C3', NULL, '+14155550123');

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables.
    SELECT @Rows = COUNT(*)
    FROM dbo.Notification AS n
    INNER JOIN dbo.Notification_ResetPassword AS rp ON n.EnqueuedAt = rp.EnqueuedAt
    WHERE n.[Status] = 'Pending' AND rp.UserID IN (11, 12);
    SELECT @Channels = (SELECT COUNT(*) FROM dbo.Notification_Email) + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'notifications';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Channels, @Message = N'one channel row each';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs and its return code is never seen: the test rolls back itself.
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.[test Add_Notification_ResetPassword_Batch_trx raises 735707 and leaves nothing when an item is invalid]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @RowsInTransaction INT;
    EXEC Add_Notification_ResetPassword_Batch_trxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    VALUES (1, 11, N'ada', 'A1B2C3', N'ada@example.com'), (2, 12, N'bob', 'B1B2C3', N'bob at example.com');

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    -- what the failed call wrote, seen from inside the transaction it left open
    SELECT @RowsInTransaction = COUNT(*) FROM dbo.Notification;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%item 2: EmailTo%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.[test Add_Notification_ResetPassword_Batch_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_trxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    VALUES (1, 11, N'ada', 'A1B2C3', N'ada@example.com');

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
-- A write fails half-way: the notification and e-mail rows are in, the SMS row collides with a
-- row already there (its primary key, applied to the fake). The _trx runs with XACT_ABORT ON,
-- so the caller is left a transaction it cannot commit, and nothing of the call survives.
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.[test Add_Notification_ResetPassword_Batch_trx leaves nothing of the call when a write fails midway]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Last DATETIME2(7) = '2999-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    DECLARE @Committable INT;
    DECLARE @Written INT;
    DECLARE @Kept INT;
    EXEC Add_Notification_ResetPassword_Batch_trxTests.FakeNotificationTables;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.Notification_Sms', @ConstraintName = N'PK_Notification_Sms';
    -- A last key ahead of the clock fixes the keys the call hands out: @Last plus 1 and 2 us.
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], AttemptNum, ScheduledFor, UpdatedAt, [Priority])
    VALUES (@Last, 'ResetPassword', 'Completed', 1, @Last, @Last, 0);
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
    VALUES (DATEADD(MICROSECOND, 2, @Last), '+14155550100');
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, PhoneNumber)
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', '+14155550123');

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @Committable = CASE WHEN XACT_STATE() = 1 THEN 1 ELSE 0 END;
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    SELECT
        @Written = (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email);
    SELECT @Kept = (SELECT COUNT(*) FROM dbo.Notification) + (SELECT COUNT(*) FROM dbo.Notification_Sms);

    EXEC tSQLt.AssertEquals @Expected = 2627, @Actual = @ErrorNumber, @Message = N'the SMS row collides';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Committable, @Message = N'the half-written call cannot be committed';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Written, @Message = N'nothing of the call is left';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Kept, @Message = N'the rows that were there stay';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it; the enqueue's EXECs of sp_getapplock say WITH RESULT SETS NONE so
-- that the analysis need not enter that extended procedure (the build's check describable).
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_trxTests.[test Add_Notification_ResetPassword_Batch_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'DECLARE @Items dbo.Notification_ResetPasswordItemList; '
        + N'EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = N'EnqueuedAt, ItemNo, IsDuplicate', @Actual = @Columns;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_Notification_trxTests';
GO
-- Every table the claim and its result rows (dbo.Worker_Notification_V) read or
-- write, and the settings faked empty so that notification.maxAttempts is 3 and
-- notification.leaseSeconds 300. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
--
-- The result set cannot be captured here: INSERT ... EXEC runs the procedure inside
-- the INSERT's transaction, where a _trx refuses (50001). The tests check its columns
-- with sys.dm_exec_describe_first_result_set and assert on the rows the claim left.
CREATE PROCEDURE Next_Notification_trxTests.FakeQueue
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.Notification', @ConstraintName = N'PK_Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.NotificationAttempt', @ConstraintName = N'PK_NotificationAttempt';
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
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @ExpectedLease DATETIME2(7);
    DECLARE @AttemptStartedAt DATETIME2(7);
    DECLARE @AttemptLockedBy NVARCHAR(128);
    DECLARE @Attempts INT;
    EXEC Next_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt, [Priority], LockedBy, LeaseUntil
    )
    VALUES (
        '2024-01-01T00:00:01',
        'ResetPassword',
        'Pending',
        NULL,
        0,
        NULL,
        '2024-01-01T00:00:01',
        '2024-01-01T00:00:01',
        0,
        NULL,
        NULL
    );

    EXEC @RetCode = dbo.Next_Notification_trx @LockedBy = N'worker-1';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @UpdatedAt = n.UpdatedAt,
        @LockedBy = n.LockedBy,
        @StartedAt = n.StartedAt,
        @LeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= '2024-01-01T00:00:01'
        EXEC tSQLt.Fail @Message0 = N'the claim must move UpdatedAt forward';
    IF @StartedAt IS NULL
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt';
    SET @ExpectedLease = DATEADD(SECOND, 300, @StartedAt);
    EXEC tSQLt.AssertEquals @Expected = @ExpectedLease, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
    SELECT
        @Attempts = COUNT(*),
        @AttemptStartedAt = MAX(a.StartedAt),
        @AttemptLockedBy = MAX(a.LockedBy)
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = '2024-01-01T00:00:01' AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Attempts, @Message = N'open attempts';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @AttemptStartedAt, @Message = N'the attempt starts at the new token';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'worker-1', @Actual = @AttemptLockedBy, @Message = N'the attempt''s LockedBy';
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
    DECLARE @Attempts INT;
    EXEC Next_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt, [Priority], LockedBy, LeaseUntil
    )
    VALUES ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 0, NULL, @Later, '2024-01-01T00:00:01', 0, NULL, NULL);

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
    SELECT @Attempts = COUNT(*)
    FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
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
-- The worker reads one row: the key, the token to report with, the lease to renew
-- before, and the attempt number. The metadata comes from SQL Server's analysis of the
-- procedure (through Next_Notification_Batch_trx), without running it.
CREATE PROCEDURE Next_Notification_trxTests.[test Next_Notification_trx returns EnqueuedAt UpdatedAt LeaseUntil and AttemptNum when a worker reads its row]
AS
BEGIN
    DECLARE @Columns NVARCHAR(4000);
    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, N' ', r.system_type_name, N' ', r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(N'EXEC dbo.Next_Notification_trx;', NULL, 0) AS r;

    EXEC tSQLt.AssertEqualsString
        @Expected = N'EnqueuedAt datetime2(7) , UpdatedAt datetime2(7) , LeaseUntil datetime2(7) , AttemptNum smallint ',
        @Actual = @Columns;
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_trxTests.[test Next_Notification_trx raises 50007 and claims nothing when WaitMs is out of range]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Status VARCHAR(20);
    EXEC Next_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt, [Priority], LockedBy, LeaseUntil
    )
    VALUES (
        '2024-01-01T00:00:01',
        'ResetPassword',
        'Pending',
        NULL,
        0,
        NULL,
        '2024-01-01T00:00:01',
        '2024-01-01T00:00:01',
        0,
        NULL,
        NULL
    );

    BEGIN TRY
        EXEC dbo.Next_Notification_trx @LockedBy = N'worker-1', @WaitMs = 60001;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@WaitMs%', @Actual = @ErrorMessage;
    SELECT @Status = n.[Status]
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
END;
GO

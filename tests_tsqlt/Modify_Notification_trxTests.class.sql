SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_Notification_trxTests';
GO
-- Every table the report writes (the attempt history included) and its result
-- row (dbo.Worker_Notification_V) reads, and the settings faked empty so that
-- notification.maxAttempts is 3. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
-- dbo.QueueStatus and dbo.QueueTransition stay real.
-- The result row cannot be captured here: INSERT ... EXEC runs the procedure inside
-- the INSERT's transaction, where a _trx refuses (735701). So the tests assert on the
-- rows the call left, and read its columns with sys.dm_exec_describe_first_result_set;
-- the rules of each report are dbo.Modify_Notification_utx's tests.
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
-- The item under test: key 2024-01-01T00:00:01, token four seconds later, in
-- Processing on its first attempt (step Fetch), claimed by worker-1 five seconds ago.
CREATE PROCEDURE Modify_Notification_trxTests.AddClaimedItem
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @LeaseUntil DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
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
        'Processing',
        'Fetch',
        1,
        N'',
        N'',
        @StartedAt,
        NULL,
        @Key,
        @Token,
        0,
        NULL,
        NULL,
        N'worker-1',
        @LeaseUntil
    );
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
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC Modify_Notification_trxTests.AddClaimedItem;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Modify_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed';
END;
GO
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx completes the item and commits when a processing item reports Completed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC Modify_Notification_trxTests.AddClaimedItem;

    EXEC @RetCode = dbo.Modify_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'200 OK';
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
    EXEC tSQLt.AssertEqualsString @Expected = N'200 OK', @Actual = @Response, @Message = N'Response';
    IF @Duration IS NULL OR @Duration < 0
        EXEC tSQLt.Fail @Message0 = N'the ended attempt must record its Duration';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the report must move UpdatedAt forward';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs and its return code is never seen: the test rolls back itself,
-- after reading the row. A NoTransaction test makes no permanent objects, so it asserts values,
-- not tables (AssertEqualsTable creates a work table).
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx raises 735705 and leaves the item unchanged when the token is stale]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @StaleToken DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @AttemptNum INT;
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC Modify_Notification_trxTests.AddClaimedItem;

    BEGIN TRY
        EXEC dbo.Modify_Notification_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @StaleToken,
            @Status = 'Completed',
            @Response = N'200 OK';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- the row as the failed call left it, seen from inside the transaction it left open
    SELECT
        @Status = n.[Status],
        @Step = n.[Step],
        @AttemptNum = n.AttemptNum,
        @Response = n.Response,
        @Duration = n.Duration,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Fetch', @Actual = @Step, @Message = N'Step';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Response, @Message = N'Response';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Duration, @Message = N'Duration';
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC Modify_Notification_trxTests.AddClaimedItem;

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

    SELECT
        @Status = n.[Status],
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO
-- Modify_ hands the Email channel's result on to dbo.Modify_Notification_utx, which writes it
-- on the item's row in dbo.Notification_Email. Every channel has a row there, its result
-- still empty: only the reported one may change; the item's own Response and Error and
-- those of the attempt the report ends stay as they were (empty).
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx records the result of the Email channel when a worker reports it]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC Modify_Notification_trxTests.AddClaimedItem;
    -- the attempt the claim opened
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    SELECT
        n.EnqueuedAt,
        n.StartedAt,
        n.AttemptNum,
        n.[Step],
        n.LockedBy,
        NULL AS Outcome,
        NULL AS Duration,
        N'' AS Response,
        N'' AS Error
    FROM dbo.Notification AS n;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'');

    EXEC @RetCode = dbo.Modify_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @EmailResponse = N'Email delivered',
        @EmailError = N'Email refused once';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Response = s2.Response,
        @Error = s2.Error
    FROM dbo.Notification_Email AS s2
    WHERE s2.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Email delivered', @Actual = @Response, @Message = N'EmailResponse';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Email refused once', @Actual = @Error, @Message = N'EmailError';
    SELECT
        @Response = s3.Response,
        @Error = s3.Error
    FROM dbo.Notification_Sms AS s3
    WHERE s3.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'', @Actual = @Response, @Message = N'SmsResponse is kept';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'', @Actual = @Error, @Message = N'SmsError is kept';
    SELECT
        @Response = n.Response,
        @Error = n.Error
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Response, @Message = N'the item''s Response is kept';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Error, @Message = N'the item''s Error is kept';
    SELECT
        @Outcome = t.Outcome,
        @Response = t.Response,
        @Error = t.Error
    FROM dbo.NotificationAttempt AS t
    WHERE t.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Completed', @Actual = @Outcome, @Message = N'the report ends the attempt';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'', @Actual = @Response, @Message = N'the attempt''s Response is kept';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Error, @Message = N'the attempt''s Error is kept';
END;
GO
-- Modify_ hands the Sms channel's result on to dbo.Modify_Notification_utx, which writes it
-- on the item's row in dbo.Notification_Sms. Every channel has a row there, its result
-- still empty: only the reported one may change; the item's own Response and Error and
-- those of the attempt the report ends stay as they were (empty).
--[@tSQLt:NoTransaction]('Modify_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx records the result of the Sms channel when a worker reports it]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_Notification_trxTests.FakeQueue;
    EXEC Modify_Notification_trxTests.AddClaimedItem;
    -- the attempt the claim opened
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    SELECT
        n.EnqueuedAt,
        n.StartedAt,
        n.AttemptNum,
        n.[Step],
        n.LockedBy,
        NULL AS Outcome,
        NULL AS Duration,
        N'' AS Response,
        N'' AS Error
    FROM dbo.Notification AS n;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'');

    EXEC @RetCode = dbo.Modify_Notification_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @SmsResponse = N'Sms delivered',
        @SmsError = N'Sms refused once';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Response = s2.Response,
        @Error = s2.Error
    FROM dbo.Notification_Email AS s2
    WHERE s2.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'', @Actual = @Response, @Message = N'EmailResponse is kept';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'', @Actual = @Error, @Message = N'EmailError is kept';
    SELECT
        @Response = s3.Response,
        @Error = s3.Error
    FROM dbo.Notification_Sms AS s3
    WHERE s3.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Sms delivered', @Actual = @Response, @Message = N'SmsResponse';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Sms refused once', @Actual = @Error, @Message = N'SmsError';
    SELECT
        @Response = n.Response,
        @Error = n.Error
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Response, @Message = N'the item''s Response is kept';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Error, @Message = N'the item''s Error is kept';
    SELECT
        @Outcome = t.Outcome,
        @Response = t.Response,
        @Error = t.Error
    FROM dbo.NotificationAttempt AS t
    WHERE t.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Completed', @Actual = @Outcome, @Message = N'the report ends the attempt';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'', @Actual = @Response, @Message = N'the attempt''s Response is kept';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Error, @Message = N'the attempt''s Error is kept';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Modify_Notification_trxTests.[test Modify_Notification_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'EnqueuedAt, Type, Status, Step, AttemptNum, ScheduledFor, StartedAt, UpdatedAt, '
        + N'LeaseUntil, Response, Error, UserID, Username, OTP, EmailTo, PreferredLanguage, '
        + N'EmailResponse, EmailError, PhoneNumber, SmsResponse, SmsError';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Modify_Notification_trx @EnqueuedAt = NULL, @UpdatedAt = NULL, @Status = NULL;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

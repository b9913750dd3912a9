SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Extend_Notification_trxTests';
GO
-- Every table the renewal and its result row (dbo.Worker_Notification_V) read or
-- write, and the settings faked empty so that notification.leaseSeconds is 300. In a
-- NoTransaction test the fakes hold the committed rows; tSQLt puts the real tables
-- back after the test. The result row cannot be captured (INSERT ... EXEC would run
-- the _trx inside a transaction, where it refuses): the tests assert on the item.
CREATE PROCEDURE Extend_Notification_trxTests.FakeQueue
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
-- One ResetPassword item with every column the renewal reads.
CREATE PROCEDURE Extend_Notification_trxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @UpdatedAt DATETIME2(7),
    @Status VARCHAR(20) = 'Processing',
    @AttemptNum SMALLINT = 1,
    @LockedBy NVARCHAR(128) = N'worker-1',
    @LeaseUntil DATETIME2(7) = NULL
AS
BEGIN
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
        @EnqueuedAt,
        'ResetPassword',
        @Status,
        'Send',
        @AttemptNum,
        N'',
        N'',
        @UpdatedAt,
        NULL,
        @EnqueuedAt,
        @UpdatedAt,
        0,
        NULL,
        NULL,
        @LockedBy,
        @LeaseUntil
    );
END;
GO
-- One attempt of an item; open (Outcome NULL) unless an outcome is given.
CREATE PROCEDURE Extend_Notification_trxTests.AddAttempt
    @EnqueuedAt DATETIME2(7),
    @StartedAt DATETIME2(7),
    @AttemptNum SMALLINT,
    @LockedBy NVARCHAR(128),
    @Outcome VARCHAR(20) = NULL
AS
BEGIN
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@EnqueuedAt, @StartedAt, @AttemptNum, 'Send', @LockedBy, @Outcome, NULL, N'', N'');
END;
GO
-- Calls the renewal, asserts the error it raised, and rolls back what it left open:
-- inside TRY the CATCH takes over before the procedure's own rollback runs.
CREATE PROCEDURE Extend_Notification_trxTests.AssertRefused
    @EnqueuedAt DATETIME2(7),
    @UpdatedAt DATETIME2(7),
    @LeaseSeconds INT = NULL,
    @ExpectedErrorNumber INT,
    @ExpectedPattern NVARCHAR(400) = N'%',
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    BEGIN TRY
        EXEC dbo.Extend_Notification_trx
            @EnqueuedAt = @EnqueuedAt,
            @UpdatedAt = @UpdatedAt,
            @LeaseSeconds = @LeaseSeconds;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = @ExpectedErrorNumber, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = @ExpectedPattern, @Actual = @ErrorMessage, @Message = @Case;
END;
GO
-- Asserts that the item still has the token and lease it had.
CREATE PROCEDURE Extend_Notification_trxTests.AssertUnchanged
    @EnqueuedAt DATETIME2(7),
    @UpdatedAt DATETIME2(7),
    @LeaseUntil DATETIME2(7)
AS
BEGIN
    DECLARE @ActualUpdatedAt DATETIME2(7);
    DECLARE @ActualLeaseUntil DATETIME2(7);
    SELECT
        @ActualUpdatedAt = n.UpdatedAt,
        @ActualLeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = @UpdatedAt, @Actual = @ActualUpdatedAt, @Message = N'UpdatedAt must not change';
    EXEC tSQLt.AssertEquals
        @Expected = @LeaseUntil, @Actual = @ActualLeaseUntil, @Message = N'LeaseUntil must not change';
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Extend_Notification_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50001 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Lease DATETIME2(7) = DATEADD(SECOND, 30, SYSUTCDATETIME());
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Extend_Notification_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 120;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx renews LeaseUntil and moves the token when the caller holds the item]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Lease DATETIME2(7) = DATEADD(SECOND, 30, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @AttemptNum INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @OpenStartedAt DATETIME2(7);
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
    EXEC Extend_Notification_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @Token, @AttemptNum = 1, @LockedBy = N'worker-1';

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Extend_Notification_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 120;
    SET @After = SYSUTCDATETIME();
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = n.[Status],
        @LockedBy = n.LockedBy,
        @AttemptNum = n.AttemptNum,
        @UpdatedAt = n.UpdatedAt,
        @LeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    IF @LeaseUntil IS NULL OR @LeaseUntil < DATEADD(SECOND, 120, @Before) OR @LeaseUntil > DATEADD(SECOND, 120, @After)
        EXEC tSQLt.Fail @Message0 = N'LeaseUntil must be 120 seconds after the call';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the renewal must move the token forward';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'a renewal is no new attempt';
    SELECT @OpenStartedAt = a.StartedAt
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @OpenStartedAt, @Message = N'the attempt stays open';
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx accepts the new token and refuses the old one when it renews twice]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Lease DATETIME2(7) = DATEADD(SECOND, 30, SYSUTCDATETIME());
    DECLARE @FirstRetCode INT;
    DECLARE @SecondRetCode INT;
    DECLARE @NewToken DATETIME2(7);
    DECLARE @LatestToken DATETIME2(7);
    DECLARE @LatestLease DATETIME2(7);
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
    EXEC Extend_Notification_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @Token, @AttemptNum = 1, @LockedBy = N'worker-1';

    EXEC @FirstRetCode = dbo.Extend_Notification_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 60;
    SELECT @NewToken = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC @SecondRetCode = dbo.Extend_Notification_trx @EnqueuedAt = @Key, @UpdatedAt = @NewToken, @LeaseSeconds = 60;
    SELECT
        @LatestToken = n.UpdatedAt,
        @LatestLease = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @FirstRetCode, @Message = N'first renewal';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @SecondRetCode, @Message = N'renewal with the new token';
    IF @LatestToken IS NULL OR @LatestToken <= @NewToken
        EXEC tSQLt.Fail @Message0 = N'each renewal must move the token forward';
    -- Nobody claimed it since: the old token is merely stale.
    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = 60,
        @ExpectedErrorNumber = 50005,
        @Case = N'the first token';
    EXEC Extend_Notification_trxTests.AssertUnchanged
        @EnqueuedAt = @Key, @UpdatedAt = @LatestToken, @LeaseUntil = @LatestLease;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx renews an expired lease for notificationleaseSeconds when nobody took the item]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @LockedBy NVARCHAR(128);
    EXEC Extend_Notification_trxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.leaseSeconds', 90, NULL);
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Expired;
    EXEC Extend_Notification_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @Token, @AttemptNum = 1, @LockedBy = N'worker-1';

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Extend_Notification_trx @EnqueuedAt = @Key, @UpdatedAt = @Token;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @LeaseUntil = n.LeaseUntil,
        @LockedBy = n.LockedBy
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    IF @LeaseUntil IS NULL OR @LeaseUntil < DATEADD(SECOND, 90, @Before) OR @LeaseUntil > DATEADD(SECOND, 90, @After)
        EXEC tSQLt.Fail @Message0 = N'LeaseUntil must be notification.leaseSeconds (90) after the call';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50010 and changes nothing when the item was claimed again after the token]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @OldToken DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @NewToken DATETIME2(7) = '2024-03-01T08:10:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    EXEC Extend_Notification_trxTests.FakeQueue;
    -- worker-1's lease ran out; worker-2 claimed the item again at @NewToken.
    EXEC Extend_Notification_trxTests.AddItem
        @EnqueuedAt = @Key, @UpdatedAt = @NewToken, @AttemptNum = 2, @LockedBy = N'worker-2', @LeaseUntil = @Lease;
    EXEC Extend_Notification_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-1', @Outcome = 'Error';
    EXEC Extend_Notification_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @NewToken, @AttemptNum = 2, @LockedBy = N'worker-2';

    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @OldToken,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50010,
        @ExpectedPattern = N'%worker-2%',
        @Case = N'the late worker''s token';

    EXEC Extend_Notification_trxTests.AssertUnchanged @EnqueuedAt = @Key, @UpdatedAt = @NewToken, @LeaseUntil = @Lease;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50005 and changes nothing when the token is stale and nobody claimed the item since]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @ClaimToken DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @CurrentToken DATETIME2(7) = '2024-03-01T08:00:06';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    EXEC Extend_Notification_trxTests.FakeQueue;
    -- The item changed after the claim (a step reported), under the same attempt.
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @CurrentToken, @LeaseUntil = @Lease;
    EXEC Extend_Notification_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @ClaimToken, @AttemptNum = 1, @LockedBy = N'worker-1';

    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @ClaimToken,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50005,
        @Case = N'the claim''s token';

    EXEC Extend_Notification_trxTests.AssertUnchanged
        @EnqueuedAt = @Key, @UpdatedAt = @CurrentToken, @LeaseUntil = @Lease;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50006 and changes nothing when the item is not Processing]
AS
BEGIN
    DECLARE @ErrorKey DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @CompletedKey DATETIME2(7) = '2024-03-01T08:00:01';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem
        @EnqueuedAt = @ErrorKey, @UpdatedAt = @Token, @Status = 'Error', @LockedBy = NULL;
    EXEC Extend_Notification_trxTests.AddItem
        @EnqueuedAt = @CompletedKey, @UpdatedAt = @Token, @Status = 'Completed', @LockedBy = NULL;

    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @ErrorKey,
        @UpdatedAt = @Token,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50006,
        @Case = N'an Error item';
    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @CompletedKey,
        @UpdatedAt = @Token,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50006,
        @Case = N'a Completed item';

    EXEC Extend_Notification_trxTests.AssertUnchanged @EnqueuedAt = @ErrorKey, @UpdatedAt = @Token, @LeaseUntil = NULL;
    EXEC Extend_Notification_trxTests.AssertUnchanged
        @EnqueuedAt = @CompletedKey, @UpdatedAt = @Token, @LeaseUntil = NULL;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50004 when no item has the key]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @OtherKey DATETIME2(7) = '2024-03-01T08:00:01';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @OtherKey,
        @UpdatedAt = @Token,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50004,
        @Case = N'an unknown key';

    EXEC Extend_Notification_trxTests.AssertUnchanged @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50007 and changes nothing when LeaseSeconds is out of range]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = 0,
        @ExpectedErrorNumber = 50007,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'@LeaseSeconds 0';
    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = -30,
        @ExpectedErrorNumber = 50007,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'@LeaseSeconds -30';
    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = 86401,
        @ExpectedErrorNumber = 50007,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'@LeaseSeconds 86401';
    -- A NULL @LeaseSeconds takes the setting, which is checked the same way.
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.leaseSeconds', 0, NULL);
    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = NULL,
        @ExpectedErrorNumber = 50007,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'notification.leaseSeconds 0';

    EXEC Extend_Notification_trxTests.AssertUnchanged @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
END;
GO
--[@tSQLt:NoTransaction]('Extend_Notification_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_Notification_trxTests.[test Extend_Notification_trx raises 50007 when EnqueuedAt or UpdatedAt is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    EXEC Extend_Notification_trxTests.FakeQueue;
    EXEC Extend_Notification_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = NULL,
        @UpdatedAt = @Token,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50007,
        @ExpectedPattern = N'%@EnqueuedAt%',
        @Case = N'@EnqueuedAt NULL';
    EXEC Extend_Notification_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = NULL,
        @LeaseSeconds = 120,
        @ExpectedErrorNumber = 50007,
        @ExpectedPattern = N'%@UpdatedAt%',
        @Case = N'@UpdatedAt NULL';

    EXEC Extend_Notification_trxTests.AssertUnchanged @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
END;
GO

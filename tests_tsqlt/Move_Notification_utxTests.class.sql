SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Move_Notification_utxTests';
GO
-- The queue and its attempt history. dbo.QueueStatus and dbo.QueueTransition
-- stay real: the moves under test are their deployed rows.
CREATE PROCEDURE Move_Notification_utxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
-- An item in @Status: its token is @EnqueuedAt + 5 s and it is due an hour after
-- @EnqueuedAt. A Processing item was claimed by worker-a five seconds ago, holds
-- a lease and has its open attempt (started at the token); an item with
-- attempts behind it, in any other state, ended its last one after 4 s.
CREATE PROCEDURE Move_Notification_utxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @Status VARCHAR(20),
    @AttemptNum SMALLINT = 1,
    @DedupKey NVARCHAR(200) = NULL
AS
BEGIN
    DECLARE @Token DATETIME2(7) = DATEADD(SECOND, 5, @EnqueuedAt);
    DECLARE @Processing BIT = CASE WHEN @Status = 'Processing' THEN 1 ELSE 0 END;
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
        LeaseUntil,
        DedupKey
    )
    VALUES (
        @EnqueuedAt,
        'ResetPassword',
        @Status,
        CASE WHEN @AttemptNum > 0 THEN 'Push' END,
        @AttemptNum,
        N'',
        N'',
        CASE
            WHEN @Processing = 1 THEN DATEADD(SECOND, -5, SYSUTCDATETIME())
            WHEN @AttemptNum > 0 THEN DATEADD(SECOND, 1, @EnqueuedAt)
        END,
        CASE WHEN @Processing = 0 AND @AttemptNum > 0 THEN 4000 END,
        DATEADD(HOUR, 1, @EnqueuedAt),
        @Token,
        CASE WHEN @AttemptNum > 0 THEN N'worker-a' END,
        CASE WHEN @Processing = 1 THEN DATEADD(MINUTE, 5, SYSUTCDATETIME()) END,
        @DedupKey
    );
    IF @Processing = 1
        INSERT INTO dbo.NotificationAttempt (
            EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
        )
        VALUES (@EnqueuedAt, @Token, @AttemptNum, 'Push', N'worker-a', NULL, NULL, N'', N'');
END;
GO
-- Compares the queue and its history with #Before and #BeforeAttempt, which the
-- test saved with these columns before the call (a temp table of the caller is
-- visible here).
CREATE PROCEDURE Move_Notification_utxTests.AssertNothingChanged
AS
BEGIN
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Move_Notification_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx cancels the item when it is Pending or Error or Paused]
AS
BEGIN
    DECLARE @Pending DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Error DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Paused DATETIME2(7) = '2024-01-01T00:02:00';
    DECLARE @RetPending INT;
    DECLARE @RetError INT;
    DECLARE @RetPaused INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Pending, @Status = 'Pending', @AttemptNum = 0;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Error, @Status = 'Error';
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Paused, @Status = 'Paused';

    EXEC @RetPending = dbo.Move_Notification_utx @EnqueuedAt = @Pending, @Action = 'Cancel';
    EXEC @RetError = dbo.Move_Notification_utx @EnqueuedAt = @Error, @Action = 'Cancel';
    EXEC @RetPaused = dbo.Move_Notification_utx @EnqueuedAt = @Paused, @Action = 'Cancel';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetPending, @Message = N'return code (Pending)';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetError, @Message = N'return code (Error)';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetPaused, @Message = N'return code (Paused)';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.ScheduledFor
    INTO #Actual
    FROM dbo.Notification AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.ScheduledFor
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], AttemptNum, ScheduledFor)
    VALUES
    (@Pending, 'Cancelled', 0, DATEADD(HOUR, 1, @Pending)),
    (@Error, 'Cancelled', 1, DATEADD(HOUR, 1, @Error)),
    (@Paused, 'Cancelled', 1, DATEADD(HOUR, 1, @Paused));
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx cancels the item and ends its open attempt as Cancelled when it is Processing]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @NewUpdatedAt DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @Duration BIGINT;
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @AttemptDuration BIGINT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Processing';

    EXEC @RetCode = dbo.Move_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Action = 'Cancel',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @Duration = q.Duration,
        @LeaseUntil = q.LeaseUntil,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT
        @Outcome = a.Outcome,
        @AttemptDuration = a.Duration
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Cancelled', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'the lease is cleared';
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'the item''s Duration must be the milliseconds since StartedAt';
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be later than the old token';
    EXEC tSQLt.AssertEquals
        @Expected = @NewUpdatedAt, @Actual = @UpdatedAt, @Message = N'the row carries the new token';
    EXEC tSQLt.AssertEqualsString @Expected = 'Cancelled', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
    EXEC tSQLt.AssertEquals @Expected = @Duration, @Actual = @AttemptDuration, @Message = N'the attempt''s Duration';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx pauses the item when it is Pending or Error]
AS
BEGIN
    DECLARE @Pending DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Error DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @RetPending INT;
    DECLARE @RetError INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Pending, @Status = 'Pending', @AttemptNum = 0;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Error, @Status = 'Error';

    EXEC @RetPending = dbo.Move_Notification_utx
        @EnqueuedAt = @Pending, @UpdatedAt = '2024-01-01T00:00:05', @Action = 'Pause';
    EXEC @RetError = dbo.Move_Notification_utx @EnqueuedAt = @Error, @Action = 'Pause';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetPending, @Message = N'return code (Pending)';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetError, @Message = N'return code (Error)';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.ScheduledFor
    INTO #Actual
    FROM dbo.Notification AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.ScheduledFor
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], AttemptNum, ScheduledFor)
    VALUES
    (@Pending, 'Paused', 0, DATEADD(HOUR, 1, @Pending)),
    (@Error, 'Paused', 1, DATEADD(HOUR, 1, @Error));
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx resumes the item as Pending and keeps its due time when Resume has no ScheduledFor]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @DueAt DATETIME2(7) = DATEADD(HOUR, 1, @Key);  -- AddItem's due time
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Paused';

    EXEC @RetCode = dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Resume';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum is kept';
    EXEC tSQLt.AssertEquals @Expected = @DueAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor is kept';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx resumes the item as Pending due at the given time when Resume has ScheduledFor]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @ResumeAt DATETIME2(7) = DATEADD(DAY, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Paused';

    EXEC @RetCode = dbo.Move_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Action = 'Resume',
        @ScheduledFor = @ResumeAt;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = @ResumeAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx terminates the item and ends its open attempt when it is Processing]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Duration BIGINT;
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @AttemptDuration BIGINT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Processing';

    EXEC @RetCode = dbo.Move_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Action = 'Terminate';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @Duration = q.Duration,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT
        @Outcome = a.Outcome,
        @AttemptDuration = a.Duration
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Terminated', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'the lease is cleared';
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'the item''s Duration must be the milliseconds since StartedAt';
    EXEC tSQLt.AssertEqualsString @Expected = 'Terminated', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
    EXEC tSQLt.AssertEquals @Expected = @Duration, @Actual = @AttemptDuration, @Message = N'the attempt''s Duration';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx retries the item now with a fresh budget when a Failed item gets Retry without ScheduledFor]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @Duration BIGINT;
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Retry';
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @Duration = q.Duration,
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'a fresh budget';
    EXEC tSQLt.AssertEquals @Expected = 4000, @Actual = @Duration, @Message = N'the last attempt''s Duration is kept';
    IF @ScheduledFor IS NULL OR @ScheduledFor < @Before OR @ScheduledFor > @After
        EXEC tSQLt.Fail @Message0 = N'without @ScheduledFor the retry is due at the time of the call';
END;
GO
-- A retry checks its DedupKey under that key's lock, held for the transaction; a cancel
-- takes none (dbo.Lock_ItemKeys_utx's names; APPLOCK_MODE:
-- https://learn.microsoft.com/sql/t-sql/functions/applock-mode-transact-sql).
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx holds the lock of the DedupKey when a Failed item with one gets Retry]
AS
BEGIN
    DECLARE @Mode NVARCHAR(32); -- an EXEC takes no function call as an argument
    DECLARE @Failed DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Pending DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Retried NVARCHAR(200) = N'order-1';
    DECLARE @Cancelled NVARCHAR(200) = N'order-2';
    DECLARE @RetRetry INT;
    DECLARE @RetCancel INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Failed, @Status = 'Failed', @DedupKey = @Retried;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Pending, @Status = 'Pending', @DedupKey = @Cancelled;

    EXEC @RetRetry = dbo.Move_Notification_utx @EnqueuedAt = @Failed, @Action = 'Retry';
    EXEC @RetCancel = dbo.Move_Notification_utx @EnqueuedAt = @Pending, @Action = 'Cancel';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetRetry, @Message = N'retry';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCancel, @Message = N'cancel';
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.Notification.DedupKey#' + CAST(CHECKSUM(@Retried) AS NVARCHAR(11)), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = @Mode,
        @Message = N'the retried item''s DedupKey';
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.Notification.DedupKey#' + CAST(CHECKSUM(@Cancelled) AS NVARCHAR(11)), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'NoLock',
        @Actual = @Mode,
        @Message = N'the cancelled item''s DedupKey';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx retries the item at the given time when a Failed item gets Retry with ScheduledFor]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetryAt DATETIME2(7) = DATEADD(HOUR, 2, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3;

    EXEC @RetCode = dbo.Move_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Action = 'Retry',
        @ScheduledFor = @RetryAt;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'a fresh budget';
    EXEC tSQLt.AssertEquals @Expected = @RetryAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx moves only the due time when a Pending or Error or Paused item is rescheduled]
AS
BEGIN
    DECLARE @Pending DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Error DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Paused DATETIME2(7) = '2024-01-01T00:02:00';
    DECLARE @NewTime DATETIME2(7) = '2024-01-02T06:30:00';
    DECLARE @RetPending INT;
    DECLARE @RetError INT;
    DECLARE @RetPaused INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Pending, @Status = 'Pending', @AttemptNum = 0;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Error, @Status = 'Error';
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Paused, @Status = 'Paused';

    EXEC @RetPending = dbo.Move_Notification_utx
        @EnqueuedAt = @Pending, @Action = 'Reschedule', @ScheduledFor = @NewTime;
    EXEC @RetError = dbo.Move_Notification_utx
        @EnqueuedAt = @Error, @UpdatedAt = '2024-01-01T00:01:05', @Action = 'Reschedule', @ScheduledFor = @NewTime;
    EXEC @RetPaused = dbo.Move_Notification_utx @EnqueuedAt = @Paused, @Action = 'Reschedule', @ScheduledFor = @NewTime;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetPending, @Message = N'return code (Pending)';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetError, @Message = N'return code (Error)';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetPaused, @Message = N'return code (Paused)';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor
    INTO #Actual
    FROM dbo.Notification AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.[Step],
        a.AttemptNum,
        a.Duration,
        a.ScheduledFor
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], [Step], AttemptNum, Duration, ScheduledFor)
    VALUES
    (@Pending, 'Pending', NULL, 0, NULL, @NewTime),
    (@Error, 'Error', 'Push', 1, 4000, @NewTime),
    (@Paused, 'Paused', 'Push', 1, 4000, @NewTime);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735706 and changes nothing when a Processing item is paused]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Processing';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Pause';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735706 and changes nothing when a Pending item is terminated]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Pending', @AttemptNum = 0;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Terminate';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735706 and changes nothing when a Failed item is resumed]
AS
BEGIN
    -- Failed -> Pending is a row of dbo.QueueTransition, but it is Retry's move:
    -- Resume starts from Paused only (a resume must not hand out a fresh budget).
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Resume';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735708 and changes nothing when a Completed item is cancelled]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Completed';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Cancel';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735708, @Actual = @ErrorNumber;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735708 and changes nothing when a Processing item is rescheduled]
AS
BEGIN
    -- A running attempt has no due time to move: only a claim made it run.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @NewTime DATETIME2(7) = '2024-01-02T06:30:00';
    DECLARE @ErrorNumber INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Processing';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Reschedule', @ScheduledFor = @NewTime;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735708, @Actual = @ErrorNumber;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735705 and changes nothing when the given token is stale]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @StaleToken DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @ErrorNumber INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Pending', @AttemptNum = 0;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @StaleToken, @Action = 'Cancel';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735704 when no item has the key]
AS
BEGIN
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:00', @Status = 'Pending', @AttemptNum = 0;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735704;

    EXEC dbo.Move_Notification_utx @EnqueuedAt = '2024-01-01T00:00:01', @Action = 'Cancel';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735707 when the action is unknown]
AS
BEGIN
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:00', @Status = 'Pending', @AttemptNum = 0;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Action%';

    EXEC dbo.Move_Notification_utx @EnqueuedAt = '2024-01-01T00:00:00', @Action = 'Delete';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735707 when Reschedule has no ScheduledFor]
AS
BEGIN
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:00', @Status = 'Pending', @AttemptNum = 0;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@ScheduledFor%';

    EXEC dbo.Move_Notification_utx @EnqueuedAt = '2024-01-01T00:00:00', @Action = 'Reschedule';
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735711 and changes nothing when Retry finds the DedupKey on another unfinished item]
AS
BEGIN
    -- The failed item left the dedup index when it failed; the same job was
    -- enqueued again since and is still Pending.
    DECLARE @Failed DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Holder DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem
        @EnqueuedAt = @Failed, @Status = 'Failed', @AttemptNum = 3, @DedupKey = N'sync:C-1';
    EXEC Move_Notification_utxTests.AddItem
        @EnqueuedAt = @Holder, @Status = 'Pending', @AttemptNum = 0, @DedupKey = N'sync:C-1';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Failed, @Action = 'Retry';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735711, @Actual = @ErrorNumber;
    -- The message names the item that holds the key (style 126 of its key).
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%2024-01-01T00:01:00%', @Actual = @ErrorMessage;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735706 and changes nothing when an Error item is retried]
AS
BEGIN
    -- An item in Error still has attempts left: Retry is for a Failed item only.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Error', @AttemptNum = 1;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Retry';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%cannot go from Error to Pending%', @Actual = @ErrorMessage;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735708 and changes nothing when a Paused item is retried]
AS
BEGIN
    -- A paused item is not editable (dbo.QueueIsEditable_fn): only Resume, Cancel and
    -- Reschedule may change it, so Retry is refused as 735708 before any transition
    -- is looked at.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Paused', @AttemptNum = 1;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Retry';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735708, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%is Paused and can no longer change%', @Actual = @ErrorMessage;
    EXEC Move_Notification_utxTests.AssertNothingChanged;
END;
GO
--[@tSQLt:NoTransaction]('Move_Notification_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx raises 735702 when no transaction is open]
AS
BEGIN
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Move_Notification_utx @EnqueuedAt = '2024-01-01T00:00:00', @Action = 'Cancel';
END;
GO
-- Batches: the batch row faked and the callback spied; dbo.Count_QueueBatch_utx runs for
-- real. Batch 7: 3 items, one of them Failed, @Done completed, sealed; its callback
-- enqueued already when @Finished = 1.
CREATE PROCEDURE Move_Notification_utxTests.AddBatch
    @Done INT = 0,
    @Finished BIT = 0
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    -- The spy marks each call on its batch: a star more in its Name (the batches start unnamed).
    EXEC tSQLt.SpyProcedure
        @ProcedureName = N'dbo.Callback_QueueBatch_utx',
        @CommandToExecute = N'UPDATE dbo.QueueBatch SET [Name] = CONCAT([Name], N''*'') WHERE BatchID = @BatchID;';
    INSERT INTO dbo.QueueBatch (
        BatchID, CallbackQueue, CallbackType, Total, Completed, Failed, SealedAt, FinishedAt, CallbackEnqueuedAt
    )
    VALUES (
        7, 'AnyJobQueue', 'BatchDone', 3, @Done, 1, '2024-01-01T00:00:00',
        CASE WHEN @Finished = 1 THEN '2024-01-01T01:00:00' END,
        CASE WHEN @Finished = 1 THEN '2024-01-01T01:00:00' END
    );
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx counts the item in its batch and enqueues the callback when Cancel finishes the batch]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Cancelled INT;
    DECLARE @Calls INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Pending', @AttemptNum = 0;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Move_Notification_utxTests.AddBatch @Done = 1;

    EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Cancel';

    SELECT @Cancelled = b.Cancelled FROM dbo.QueueBatch AS b;
    SELECT @Calls = ISNULL(LEN(b.[Name]), 0) FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Cancelled;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Calls;
END;
GO
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx counts the item as Terminated in its batch when a Processing item is terminated]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Terminated INT;
    DECLARE @Calls INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Processing';
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Move_Notification_utxTests.AddBatch @Done = 0;

    EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Terminate';

    SELECT @Terminated = b.Terminated FROM dbo.QueueBatch AS b;
    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Terminated;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
END;
GO
-- Before the callback: the batch waits for the retried item again.
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx takes the item back from the Failed of its batch when a batched item is retried]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Failed INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Move_Notification_utxTests.AddBatch @Done = 1;

    EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Retry';

    SELECT @Failed = b.Failed FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Failed;
END;
GO
-- After the callback: the counts follow the item, the callback stays the one enqueued.
CREATE PROCEDURE Move_Notification_utxTests.[test Move_Notification_utx keeps the batch finished and enqueues nothing when a batched item is retried after the callback]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Failed INT;
    DECLARE @FinishedAt DATETIME2(7);
    DECLARE @WasFinishedAt DATETIME2(7) = '2024-01-01T01:00:00';
    DECLARE @Calls INT;
    EXEC Move_Notification_utxTests.FakeQueue;
    EXEC Move_Notification_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Move_Notification_utxTests.AddBatch @Done = 2, @Finished = 1;

    EXEC dbo.Move_Notification_utx @EnqueuedAt = @Key, @Action = 'Retry';

    SELECT
        @Failed = b.Failed,
        @FinishedAt = b.FinishedAt
    FROM dbo.QueueBatch AS b;
    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Failed;
    EXEC tSQLt.AssertEquals @Expected = @WasFinishedAt, @Actual = @FinishedAt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
END;
GO

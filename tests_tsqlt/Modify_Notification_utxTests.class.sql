SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_Notification_utxTests';
GO
-- The queue, its attempt history and every table its worker view joins (a custom queue's
-- channels, which a report writes, among them), and the settings faked empty so that every
-- notification.* setting has its documented default (maxAttempts 3, leaseSeconds 300,
-- backoffBaseMs 1000, ...) whatever the database holds. dbo.QueueStatus and
-- dbo.QueueTransition stay real: the lifecycle under test is their deployed rows.
-- Modify_ (and Move_, which does its retry by hand) read the queue by its key without
-- FORCESEEK: the fakes need no constraint put back.
CREATE PROCEDURE Modify_Notification_utxTests.FakeQueue
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
-- A backoff without jitter: 60 s after a first Error outcome, doubling per attempt.
CREATE PROCEDURE Modify_Notification_utxTests.SetBackoffWithoutJitter
AS
BEGIN
    INSERT INTO dbo.AppSettings (Param, ValInt)
    VALUES
    ('notification.backoffBaseMs', 60000),
    ('notification.backoffFactorPct', 200),
    ('notification.backoffJitterPct', 0);
END;
GO
-- An item in Processing: @LockedBy claimed it at @Token (its open attempt started
-- then) five seconds ago, on attempt @AttemptNum at step Fetch; its lease runs
-- until @LeaseUntil (NULL: five minutes from now).
CREATE PROCEDURE Modify_Notification_utxTests.AddClaimedItem
    @EnqueuedAt DATETIME2(7),
    @Token DATETIME2(7),
    @AttemptNum SMALLINT = 1,
    @LockedBy NVARCHAR(128) = N'worker-a',
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
        'Processing',
        'Fetch',
        @AttemptNum,
        N'',
        N'',
        DATEADD(SECOND, -5, SYSUTCDATETIME()),
        NULL,
        @EnqueuedAt,
        @Token,
        0,
        NULL,
        NULL,
        @LockedBy,
        ISNULL(@LeaseUntil, DATEADD(MINUTE, 5, SYSUTCDATETIME()))
    );
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@EnqueuedAt, @Token, @AttemptNum, 'Fetch', @LockedBy, NULL, NULL, N'', N'');
END;
GO
-- An item no worker holds, in @Status (Pending, Error, Paused, Failed, ...): its
-- token is @EnqueuedAt + 5 s and it is due an hour after @EnqueuedAt; with
-- attempts behind it, its last one ran 4 s at step Push and left the error HTTP 503.
-- With @LastOutcome, the history holds that last attempt, ended with this outcome.
CREATE PROCEDURE Modify_Notification_utxTests.AddWaitingItem
    @EnqueuedAt DATETIME2(7),
    @Status VARCHAR(20),
    @AttemptNum SMALLINT = 0,
    @DedupKey NVARCHAR(200) = NULL,
    @LastOutcome VARCHAR(20) = NULL
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
        CASE WHEN @AttemptNum > 0 THEN 'Push' END,
        @AttemptNum,
        N'',
        CASE WHEN @AttemptNum > 0 THEN N'HTTP 503' ELSE N'' END,
        CASE WHEN @AttemptNum > 0 THEN DATEADD(SECOND, 1, @EnqueuedAt) END,
        CASE WHEN @AttemptNum > 0 THEN 4000 END,
        DATEADD(HOUR, 1, @EnqueuedAt),
        DATEADD(SECOND, 5, @EnqueuedAt),
        0,
        NULL,
        @DedupKey,
        CASE WHEN @AttemptNum > 0 THEN N'worker-a' END,
        NULL
    );
    IF @LastOutcome IS NOT NULL
        INSERT INTO dbo.NotificationAttempt (
            EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
        )
        VALUES (
            @EnqueuedAt, DATEADD(SECOND, 1, @EnqueuedAt), @AttemptNum, 'Push', N'worker-a', @LastOutcome, 4000, N'',
            N'HTTP 503'
        );
END;
GO
-- Most tests insert their item with a fixed past key and token; a claimed one started a few
-- seconds ago. The expected row is the row before the call with the expected changes applied, so
-- every column the report must not touch is checked too; Duration depends on the clock and is
-- checked on its own.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx completes the item when a processing item reports Completed]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'{"done":true}',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be returned, later than the old token';
    -- the step reached is kept; the lease ends with the attempt
    UPDATE #Expected
    SET
        [Status] = 'Completed',
        Response = N'{"done":true}',
        UpdatedAt = @NewUpdatedAt,
        LeaseUntil = NULL;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Duration = q.Duration FROM dbo.Notification AS q;
    -- AddClaimedItem's attempt started five seconds ago.
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt (at least 4000)';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx moves the token forward when the old token is ahead of the clock]
AS
BEGIN
    -- A token ahead of the clock is what a second change in the same clock tick
    -- looks like: now is not later than the old token.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = 'Push',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be later than the old token';
    EXEC tSQLt.AssertEquals
        @Expected = @NewUpdatedAt, @Actual = @UpdatedAt, @Message = N'the row carries the new token';
END;
GO
-- The caller claimed the item at 00:00:04 and the token moved on without a new
-- claim (an Extend_, or a report the caller already made): no attempt started
-- after the caller's token, so the item was not taken over. The test catches the
-- error itself, to assert afterwards that nothing changed.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735705 and changes nothing when the token is stale and nobody claimed the item since]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @StaleToken dbo.[_Timestamp] = '2024-01-01T00:00:04';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    -- the caller's attempt started at its own token, not after it
    UPDATE dbo.NotificationAttempt SET StartedAt = @StaleToken;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #ExpectedAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @StaleToken,
            @Status = 'Completed',
            @Response = N'{"done":true}';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #ActualAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedAttempt', @Actual = N'#ActualAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735704 when no item has the key]
AS
BEGIN
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = '2024-01-01T00:00:01', @Token = @Token;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735704;

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = '2024-01-01T00:00:02', @UpdatedAt = @Token, @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 when the key is NULL]
AS
BEGIN
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@EnqueuedAt and @UpdatedAt%';

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = NULL, @UpdatedAt = '2024-01-01T00:00:05', @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 when the token is NULL]
AS
BEGIN
    -- the item is there: the NULL token alone is refused
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = '2024-01-01T00:00:05';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@EnqueuedAt and @UpdatedAt%';

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = NULL, @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 when the Status is NULL]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Status must be one of%';

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = NULL;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 when the Status is unknown]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Status must be one of%';

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Done';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 when the Step is blank]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Step must be 1 to 50 characters%';

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Processing', @Step = ' ';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 when the Step is over 50 characters]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    -- one character more than dbo.QueueStep holds: it must be refused, not cut
    DECLARE @Step VARCHAR(400) = REPLICATE('x', 51);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Step must be 1 to 50 characters%';

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Processing', @Step = @Step;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx gives the attempt back when a processing item reports Pending]
AS
BEGIN
    -- A worker shutting down releases what it has not worked on: the attempt does not count.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @ItemLeaseUntil DATETIME2(7);
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @Error NVARCHAR(MAX);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 2;

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @ItemLeaseUntil = q.LeaseUntil,
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT
        @Outcome = a.Outcome,
        @Error = a.Error
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'the attempt is given back';
    IF @ItemLeaseUntil IS NOT NULL EXEC tSQLt.Fail @Message0 = N'the lease must be cleared';
    -- AddClaimedItem makes the item due at its key
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @ScheduledFor, @Message = N'due as it was';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Outcome, @Message = N'the attempt ends as Pending';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'released unworked by its worker', @Actual = @Error, @Message = N'the attempt says why';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735706 and changes nothing when Pending reports Completed]
AS
BEGIN
    -- never claimed: no worker may complete it
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem @EnqueuedAt = @Key, @Status = 'Pending';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Completed';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%cannot go from Pending to Completed%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735706 and changes nothing when an Error item reports Completed]
AS
BEGIN
    -- An item waiting for its retry has no attempt running: no worker may report
    -- it Completed (dbo.QueueTransition has no Error -> Completed).
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Key, @Status = 'Error', @AttemptNum = 1, @LastOutcome = 'Error';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed',
            @Response = N'{"done":true}';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%cannot go from Error to Completed%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735708 and changes nothing when the item is Completed]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- completed on its first attempt, which the history holds
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Key, @Status = 'Completed', @AttemptNum = 1, @LastOutcome = 'Completed';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Error', @Error = N'late report';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735708, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%is Completed and can no longer change%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
-- dbo.QueueTransition allows Paused -> Pending, but that is Resume's move (Move_):
-- Modify_ refuses a paused item whatever it reports (dbo.QueueIsEditable_fn).
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735708 and changes nothing when the item is Paused]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @PendingErrorNumber INT;
    DECLARE @PendingMessage NVARCHAR(4000);
    DECLARE @CompletedErrorNumber INT;
    DECLARE @CompletedMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- its first attempt ended in Error, then it was paused
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Key, @Status = 'Paused', @AttemptNum = 1, @LastOutcome = 'Error';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';
    END TRY
    BEGIN CATCH
        SELECT
            @PendingErrorNumber = ERROR_NUMBER(),
            @PendingMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Completed', @Response = N'late report';
    END TRY
    BEGIN CATCH
        SELECT
            @CompletedErrorNumber = ERROR_NUMBER(),
            @CompletedMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735708, @Actual = @PendingErrorNumber, @Message = N'reported Pending';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%is Paused and can no longer change%',
        @Actual = @PendingMessage,
        @Message = N'reported Pending';
    EXEC tSQLt.AssertEquals @Expected = 735708, @Actual = @CompletedErrorNumber, @Message = N'reported Completed';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%is Paused and can no longer change%',
        @Actual = @CompletedMessage,
        @Message = N'reported Completed';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx fails the item when its last attempt errs]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- its third claim of three (notification.maxAttempts' default), the attempt still open
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 3;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'HTTP 503',
        @ScheduledFor = '2099-01-01',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    -- Failed, not Error: so it is not rescheduled either
    UPDATE #Expected
    SET
        [Status] = 'Failed',
        Error = N'HTTP 503',
        UpdatedAt = @NewUpdatedAt,
        LeaseUntil = NULL;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Duration = q.Duration FROM dbo.Notification AS q;
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt (at least 4000)';
    SELECT @Outcome = a.Outcome
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx schedules a retry and keeps the step when an Error outcome has attempts left]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetryAt dbo.[_Timestamp] = DATEADD(MINUTE, 10, SYSUTCDATETIME());
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 1;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;

    -- @Step NULL: the next attempt resumes at the recorded step
    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Step = NULL,
        @Error = N'HTTP 503',
        @ScheduledFor = @RetryAt,
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    UPDATE #Expected
    SET
        [Status] = 'Error',
        Error = N'HTTP 503',
        ScheduledFor = @RetryAt,
        UpdatedAt = @NewUpdatedAt,
        LeaseUntil = NULL;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Duration = q.Duration FROM dbo.Notification AS q;
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt (at least 4000)';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx retries after the base backoff when the first attempt ends in Error without ScheduledFor]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Before dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @ScheduledFor dbo.[_Timestamp];
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.SetBackoffWithoutJitter;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 1;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'HTTP 503';
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    -- The report's own "now" lies between @Before and @After: the retry is due 60 s after it.
    IF @ScheduledFor IS NULL OR @ScheduledFor < DATEADD(SECOND, 60, @Before) OR @ScheduledFor > DATEADD(SECOND, 60, @After)
        EXEC tSQLt.Fail @Message0 = N'after a first attempt the retry is due backoffBaseMs (60 s) after the report';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx doubles the backoff when an Error outcome on the second attempt has no ScheduledFor]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Before dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @ScheduledFor dbo.[_Timestamp];
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.SetBackoffWithoutJitter;
    -- The second claim of three: attempts are left, so the item stays in Error.
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 2;

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'HTTP 503';
    SET @After = SYSUTCDATETIME();

    SELECT
        @Status = q.[Status],
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    IF
        @ScheduledFor IS NULL
        OR @ScheduledFor < DATEADD(SECOND, 120, @Before)
        OR @ScheduledFor > DATEADD(SECOND, 120, @After)
        EXEC tSQLt.Fail @Message0 = N'after a second attempt the retry is due 2 x 60 s after the report';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx keeps the given time instead of the backoff when an Error outcome has ScheduledFor]
AS
BEGIN
    -- Sooner than the 60 s backoff: the caller's time wins either way.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetryAt dbo.[_Timestamp] = DATEADD(SECOND, 5, SYSUTCDATETIME());
    DECLARE @Status VARCHAR(20);
    DECLARE @ScheduledFor dbo.[_Timestamp];
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.SetBackoffWithoutJitter;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 1;

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'HTTP 503',
        @ScheduledFor = @RetryAt;

    SELECT
        @Status = q.[Status],
        @ScheduledFor = q.ScheduledFor
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = @RetryAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records a new Step when it stays Processing]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy
    INTO #Expected
    FROM dbo.Notification AS q;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = 'Push',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be returned, later than the old token';
    -- the attempt goes on: no Duration yet, the same holder
    UPDATE #Expected
    SET
        [Step] = 'Push',
        UpdatedAt = @NewUpdatedAt;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_Notification_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Modify_Notification_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735702 when called outside a transaction]
AS
BEGIN
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = '2024-01-01T00:00:01',
        @UpdatedAt = '2024-01-01T00:00:05',
        @Status = 'Completed';
END;
GO
-- Done as Move_Notification_utx's Retry: a fresh budget, due now when no @ScheduledFor is given.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx starts the attempts again when a Failed item goes back to Pending]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @Before dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum SMALLINT;
    DECLARE @Duration BIGINT;
    DECLARE @ScheduledFor dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- its three attempts spent, the last one ran 4 s
    EXEC Modify_Notification_utxTests.AddWaitingItem @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Pending',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @Duration = q.Duration,
        @ScheduledFor = q.ScheduledFor,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'a fresh budget';
    EXEC tSQLt.AssertEquals @Expected = 4000, @Actual = @Duration, @Message = N'the last attempt''s Duration, not the wait since';
    IF @ScheduledFor IS NULL OR @ScheduledFor < @Before OR @ScheduledFor > @After
        EXEC tSQLt.Fail @Message0 = N'without @ScheduledFor the retry is due at the time of the report';
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be returned, later than the old token';
    EXEC tSQLt.AssertEquals
        @Expected = @NewUpdatedAt, @Actual = @UpdatedAt, @Message = N'the row carries the new token';
END;
GO
-- A retry by hand (Failed -> Pending) gives a fresh attempt budget and nothing else: a step,
-- a response or an error belongs to an attempt, and a Failed item has none running.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 and changes nothing when a retry by hand brings a Step or a Response or an Error]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @StepErrorNumber INT;
    DECLARE @StepMessage NVARCHAR(4000);
    DECLARE @ResponseErrorNumber INT;
    DECLARE @ResponseMessage NVARCHAR(4000);
    DECLARE @ErrorErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3, @LastOutcome = 'Failed';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending', @Step = 'Fetch';
    END TRY
    BEGIN CATCH
        SELECT
            @StepErrorNumber = ERROR_NUMBER(),
            @StepMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending', @Response = N'{"done":true}';
    END TRY
    BEGIN CATCH
        SELECT
            @ResponseErrorNumber = ERROR_NUMBER(),
            @ResponseMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending', @Error = N'retried';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @StepErrorNumber, @Message = N'with @Step';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%', @Actual = @StepMessage, @Message = N'with @Step';
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ResponseErrorNumber, @Message = N'with @Response';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%', @Actual = @ResponseMessage, @Message = N'with @Response';
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorErrorNumber, @Message = N'with @Error';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%', @Actual = @ErrorMessage, @Message = N'with @Error';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735710 and changes nothing when another worker claimed the item since]
AS
BEGIN
    -- worker-a claimed the item at 00:00:05; its lease expired and worker-b claimed
    -- it again at 00:10:05 (ending worker-a's attempt as abandoned). worker-a's late
    -- report must not overwrite worker-b's attempt.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewToken dbo.[_Timestamp] = '2024-01-01T00:10:05';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem
        @EnqueuedAt = @Key, @Token = @NewToken, @AttemptNum = 2, @LockedBy = N'worker-b';
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (
        @Key, @OldToken, 1, 'Fetch', N'worker-a', 'Error', NULL, N'',
        N'abandoned: the lease expired; claimed again by worker-b'
    );
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #ExpectedAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @OldToken,
            @Status = 'Completed',
            @Response = N'{"done":true}';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735710, @Actual = @ErrorNumber;
    -- The message names the new holder and when it claimed the item (style 126).
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%2024-01-01T00:10:05%worker-b%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #ActualAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedAttempt', @Actual = N'#ActualAttempt', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx completes the item when its lease expired but nobody claimed it since]
AS
BEGIN
    -- A slow worker reports after its lease ran out; no other worker took the item
    -- over, so its token is still current and the report stands.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Expired dbo.[_Timestamp] = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @LeaseUntil dbo.[_Timestamp];
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @LeaseUntil = @Expired;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'{"done":true}';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @Response = q.Response,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @Outcome = a.Outcome
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'{"done":true}', @Actual = @Response, @Message = N'Response';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'the lease is cleared';
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx ends the open attempt and clears the lease when a processing item reports an outcome]
AS
BEGIN
    -- An earlier attempt (already ended) and the open one: only the open one ends.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @EarlierClaim dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Duration BIGINT;
    DECLARE @LeaseUntil dbo.[_Timestamp];
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 2;
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@Key, @EarlierClaim, 1, 'Fetch', N'worker-z', 'Error', 1200, N'', N'timeout');

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Step = 'Push',
        @Response = N'{"done":true}',
        @Error = N'1 field skipped';

    SELECT
        @Duration = q.Duration,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'the lease is cleared';
    -- AddClaimedItem's attempt started five seconds ago.
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'the item''s Duration must be the milliseconds since StartedAt';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #Actual
    FROM dbo.NotificationAttempt AS a;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error)
    VALUES
    (@Key, @EarlierClaim, 1, 'Fetch', N'worker-z', 'Error', 1200, N'', N'timeout'),
    (@Key, @Token, 2, 'Push', N'worker-a', 'Completed', @Duration, N'{"done":true}', N'1 field skipped');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the step on the open attempt and renews the lease when a processing item advances a step]
AS
BEGIN
    -- A step advance is proof of life: the lease runs leaseSeconds (here 120) from
    -- the report, and the attempt stays open with the step reached.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @OldLease dbo.[_Timestamp] = DATEADD(SECOND, 10, SYSUTCDATETIME());
    DECLARE @Before dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @LeaseUntil dbo.[_Timestamp];
    DECLARE @AttemptStep VARCHAR(50);
    DECLARE @AttemptOutcome VARCHAR(20);
    DECLARE @AttemptDuration BIGINT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt) VALUES ('notification.leaseSeconds', 120);
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @LeaseUntil = @OldLease;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = 'Push',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @Step = q.[Step],
        @Duration = q.Duration,
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Push', @Actual = @Step, @Message = N'Step';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Duration, @Message = N'Duration';
    EXEC tSQLt.AssertEquals
        @Expected = @NewUpdatedAt, @Actual = @UpdatedAt, @Message = N'the row carries the new token';
    IF @LeaseUntil IS NULL OR @LeaseUntil < DATEADD(SECOND, 120, @Before) OR @LeaseUntil > DATEADD(SECOND, 120, @After)
        EXEC tSQLt.Fail @Message0 = N'the lease must run leaseSeconds (120 s) from the report';
    SELECT
        @AttemptStep = a.[Step],
        @AttemptOutcome = a.Outcome,
        @AttemptDuration = a.Duration
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Push', @Actual = @AttemptStep, @Message = N'the attempt''s Step';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @AttemptOutcome, @Message = N'the attempt stays open';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @AttemptDuration, @Message = N'the attempt''s Duration';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735706 and changes nothing when a Pending item reports Processing]
AS
BEGIN
    -- Only a claim (Next_) moves an item into Processing: it sets the lease, the
    -- attempt count and the attempt's row, which a report cannot.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem @EnqueuedAt = @Key, @Status = 'Pending';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Processing',
            @Step = 'Fetch';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%cannot go from Pending to Processing%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.Notification';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735706 and changes nothing when an Error item reports Processing]
AS
BEGIN
    -- dbo.QueueTransition allows Error -> Processing, but only for the claim of the
    -- retry; a report of it is refused like one from Pending.
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem @EnqueuedAt = @Key, @Status = 'Error', @AttemptNum = 1;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.Notification AS q;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Processing',
            @Step = 'Fetch';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%cannot go from Error to Processing%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.Notification';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735711 and changes nothing when a Failed item returns to Pending and its DedupKey is taken]
AS
BEGIN
    -- The failed item left the dedup index when it failed; the same notification was
    -- enqueued again since and is still Pending.
    DECLARE @Failed dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @FailedToken dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @Holder dbo.[_Timestamp] = '2024-01-01T00:01:00';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Failed, @Status = 'Failed', @AttemptNum = 3, @DedupKey = N'dedup-1';
    EXEC Modify_Notification_utxTests.AddWaitingItem @EnqueuedAt = @Holder, @Status = 'Pending', @DedupKey = N'dedup-1';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.Notification AS q;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Failed, @UpdatedAt = @FailedToken, @Status = 'Pending';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735711, @Actual = @ErrorNumber;
    -- The message names the item that holds the key (style 126 of its key).
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%2024-01-01T00:01:00%', @Actual = @ErrorMessage;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- The Email channel's own delivery result: the item has a row in every channel, and
-- another item has one in Email too; only this item's Email row takes the report,
-- not the item's own Response and Error nor its attempt's.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the Email response and keeps its error when the report gives one]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Other dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'an earlier error');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'an earlier error');
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Other, N'', N'');
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Expected
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ExpectedOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @EmailResponse = N'accepted';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    UPDATE #Expected
    SET Response = N'accepted'
    WHERE Channel = 'Email' AND EnqueuedAt = @Key;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Actual
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'the channels'' rows';
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ActualOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedOwn',
        @Actual = N'#ActualOwn',
        @Message = N'the item''s and its attempt''s own Response and Error';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the Email error and keeps its response when the report gives one]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Other dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'queued', N'');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'queued', N'');
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Other, N'', N'');
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Expected
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ExpectedOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @EmailError = N'rejected';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    UPDATE #Expected
    SET Error = N'rejected'
    WHERE Channel = 'Email' AND EnqueuedAt = @Key;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Actual
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'the channels'' rows';
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ActualOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedOwn',
        @Actual = N'#ActualOwn',
        @Message = N'the item''s and its attempt''s own Response and Error';
END;
GO
-- A notification need not use every channel: a report on one it has no row in is refused,
-- with its response or its error, before anything is written.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 and changes nothing when the item has no Email channel]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @ResponseErrorNumber INT;
    DECLARE @ResponseMessage NVARCHAR(4000);
    DECLARE @ErrorErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'');
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #BeforeChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed',
            @EmailResponse = N'accepted';
    END TRY
    BEGIN CATCH
        SELECT
            @ResponseErrorNumber = ERROR_NUMBER(),
            @ResponseMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Error',
            @EmailError = N'rejected';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ResponseErrorNumber, @Message = N'with @EmailResponse';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%has no Email channel%',
        @Actual = @ResponseMessage,
        @Message = N'with @EmailResponse';
    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ErrorErrorNumber, @Message = N'with @EmailError';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%has no Email channel%',
        @Actual = @ErrorMessage,
        @Message = N'with @EmailError';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #AfterChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeChannel', @Actual = N'#AfterChannel', @Message = N'the channels'' rows';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Email';
END;
GO
-- A retry by hand (Failed -> Pending) of an item that has its Email row: the refusal
-- is the retry's rule, not a missing channel.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 and changes nothing when a retry by hand brings an Email result]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ResponseErrorNumber INT;
    DECLARE @ResponseMessage NVARCHAR(4000);
    DECLARE @ErrorErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3, @LastOutcome = 'Failed';
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'HTTP 503');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'HTTP 503');
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #BeforeChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Pending',
            @EmailResponse = N'accepted';
    END TRY
    BEGIN CATCH
        SELECT
            @ResponseErrorNumber = ERROR_NUMBER(),
            @ResponseMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Pending',
            @EmailError = N'rejected';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ResponseErrorNumber, @Message = N'with @EmailResponse';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%',
        @Actual = @ResponseMessage,
        @Message = N'with @EmailResponse';
    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ErrorErrorNumber, @Message = N'with @EmailError';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%',
        @Actual = @ErrorMessage,
        @Message = N'with @EmailError';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #AfterChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeChannel', @Actual = N'#AfterChannel', @Message = N'the channels'' rows';
END;
GO
-- The Sms channel's own delivery result: the item has a row in every channel, and
-- another item has one in Sms too; only this item's Sms row takes the report,
-- not the item's own Response and Error nor its attempt's.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the Sms response and keeps its error when the report gives one]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Other dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'an earlier error');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'an earlier error');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Other, N'', N'');
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Expected
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ExpectedOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @SmsResponse = N'accepted';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    UPDATE #Expected
    SET Response = N'accepted'
    WHERE Channel = 'Sms' AND EnqueuedAt = @Key;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Actual
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'the channels'' rows';
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ActualOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedOwn',
        @Actual = N'#ActualOwn',
        @Message = N'the item''s and its attempt''s own Response and Error';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the Sms error and keeps its response when the report gives one]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Other dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'queued', N'');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'queued', N'');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Other, N'', N'');
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Expected
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ExpectedOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @SmsError = N'rejected';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    UPDATE #Expected
    SET Error = N'rejected'
    WHERE Channel = 'Sms' AND EnqueuedAt = @Key;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #Actual
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'the channels'' rows';
    SELECT
        r.Source,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #ActualOwn
    FROM (
        SELECT
            'item' AS Source,
            q.EnqueuedAt,
            q.Response,
            q.Error
        FROM dbo.Notification AS q
        UNION ALL
        SELECT
            'attempt' AS Source,
            a.EnqueuedAt,
            a.Response,
            a.Error
        FROM dbo.NotificationAttempt AS a
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedOwn',
        @Actual = N'#ActualOwn',
        @Message = N'the item''s and its attempt''s own Response and Error';
END;
GO
-- A notification need not use every channel: a report on one it has no row in is refused,
-- with its response or its error, before anything is written.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 and changes nothing when the item has no Sms channel]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @ResponseErrorNumber INT;
    DECLARE @ResponseMessage NVARCHAR(4000);
    DECLARE @ErrorErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'');
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #BeforeChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed',
            @SmsResponse = N'accepted';
    END TRY
    BEGIN CATCH
        SELECT
            @ResponseErrorNumber = ERROR_NUMBER(),
            @ResponseMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Error',
            @SmsError = N'rejected';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ResponseErrorNumber, @Message = N'with @SmsResponse';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%has no Sms channel%',
        @Actual = @ResponseMessage,
        @Message = N'with @SmsResponse';
    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ErrorErrorNumber, @Message = N'with @SmsError';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%has no Sms channel%',
        @Actual = @ErrorMessage,
        @Message = N'with @SmsError';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #AfterChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeChannel', @Actual = N'#AfterChannel', @Message = N'the channels'' rows';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Sms';
END;
GO
-- A retry by hand (Failed -> Pending) of an item that has its Sms row: the refusal
-- is the retry's rule, not a missing channel.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 735707 and changes nothing when a retry by hand brings a Sms result]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:06';
    DECLARE @ResponseErrorNumber INT;
    DECLARE @ResponseMessage NVARCHAR(4000);
    DECLARE @ErrorErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddWaitingItem
        @EnqueuedAt = @Key, @Status = 'Failed', @AttemptNum = 3, @LastOutcome = 'Failed';
    INSERT INTO dbo.Notification_Email (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'HTTP 503');
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, Response, Error) VALUES (@Key, N'', N'HTTP 503');
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #BeforeChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Pending',
            @SmsResponse = N'accepted';
    END TRY
    BEGIN CATCH
        SELECT
            @ResponseErrorNumber = ERROR_NUMBER(),
            @ResponseMessage = ERROR_MESSAGE();
    END CATCH;
    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Pending',
            @SmsError = N'rejected';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ResponseErrorNumber, @Message = N'with @SmsResponse';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%',
        @Actual = @ResponseMessage,
        @Message = N'with @SmsResponse';
    EXEC tSQLt.AssertEquals
        @Expected = 735707, @Actual = @ErrorErrorNumber, @Message = N'with @SmsError';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%takes only @ScheduledFor%',
        @Actual = @ErrorMessage,
        @Message = N'with @SmsError';
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #After
    FROM dbo.Notification AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #AfterAttempt
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeAttempt', @Actual = N'#AfterAttempt', @Message = N'dbo.NotificationAttempt';
    SELECT
        r.Channel,
        r.EnqueuedAt,
        r.Response,
        r.Error
    INTO #AfterChannel
    FROM (
        SELECT
            'Email' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Email AS c
        UNION ALL
        SELECT
            'Sms' AS Channel,
            c.EnqueuedAt,
            c.Response,
            c.Error
        FROM dbo.Notification_Sms AS c
    ) AS r;
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#BeforeChannel', @Actual = N'#AfterChannel', @Message = N'the channels'' rows';
END;
GO
-- Batches: the batch row faked and the callback spied (its own class tests what it
-- enqueues); dbo.Count_QueueBatch_utx runs for real, so the batch row shows the count.
-- Batch 7: @Total items, @Done of them completed, sealed when @Sealed = 1.
CREATE PROCEDURE Modify_Notification_utxTests.AddBatch
    @Total INT,
    @Done INT,
    @Sealed BIT
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    -- The spy marks each call on its batch: a star more in its Name (the batches start unnamed).
    EXEC tSQLt.SpyProcedure
        @ProcedureName = N'dbo.Callback_QueueBatch_utx',
        @CommandToExecute = N'UPDATE dbo.QueueBatch SET [Name] = CONCAT([Name], N''*'') WHERE BatchID = @BatchID;';
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, Completed, SealedAt)
    VALUES (7, 'AnyJobQueue', 'BatchDone', @Total, @Done, CASE WHEN @Sealed = 1 THEN '2024-01-01T00:00:00' END);
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx enqueues the callback once when the last item of a sealed batch completes]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Completed INT;
    DECLARE @Calls INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Modify_Notification_utxTests.AddBatch @Total = 3, @Done = 2, @Sealed = 1;

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Completed';

    SELECT @Completed = b.Completed FROM dbo.QueueBatch AS b;
    SELECT @Calls = ISNULL(LEN(b.[Name]), 0) FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Completed;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Calls;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx counts the item but enqueues no callback when its batch is not sealed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Completed INT;
    DECLARE @Calls INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Modify_Notification_utxTests.AddBatch @Total = 3, @Done = 2, @Sealed = 0;

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Completed';

    SELECT @Completed = b.Completed FROM dbo.QueueBatch AS b;
    SELECT @Calls = SUM(ISNULL(LEN(b.[Name]), 0)) FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Completed;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Calls;
END;
GO
-- An Error with attempts left is no final state: the batch waits for the item's next one.
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx leaves the batch counts when a batched item reports an Error with attempts left]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Failed INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 1;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Modify_Notification_utxTests.AddBatch @Total = 3, @Done = 2, @Sealed = 1;

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Error';

    SELECT @Failed = b.Failed + b.Completed FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Failed;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx counts a Failed item in its batch when an Error spends the last attempt]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Failed INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.AddClaimedItem @EnqueuedAt = @Key, @Token = @Token, @AttemptNum = 3;
    UPDATE dbo.Notification SET BatchID = 7;
    EXEC Modify_Notification_utxTests.AddBatch @Total = 3, @Done = 0, @Sealed = 0;

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Error';

    SELECT @Failed = b.Failed FROM dbo.QueueBatch AS b;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Failed;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_Notification_utxTests';
GO
-- The queue, its attempt history and its channel tables, and the settings
-- faked empty so that every notification.* setting has its documented
-- default (maxAttempts 3, leaseSeconds 300, ...) whatever the database holds.
-- dbo.QueueStatus and dbo.QueueTransition stay real: the lifecycle under test
-- is their deployed rows.
CREATE PROCEDURE Modify_Notification_utxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
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
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_Notification_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx completes the item when a processing item reports Completed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @NewUpdatedAt DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'250 2.0.0 OK',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = n.[Status],
        @Step = n.[Step],
        @Response = n.Response,
        @Duration = n.Duration,
        @UpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Send', @Actual = @Step, @Message = N'Step is kept';
    EXEC tSQLt.AssertEqualsString @Expected = N'250 2.0.0 OK', @Actual = @Response, @Message = N'Response';
    -- Milliseconds since StartedAt, five seconds ago.
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt';
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be later than the old token';
    EXEC tSQLt.AssertEquals
        @Expected = @NewUpdatedAt, @Actual = @UpdatedAt, @Message = N'the row carries the new token';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx moves the token forward when the old token is ahead of the clock]
AS
BEGIN
    -- A token ahead of the clock is what a second change in the same clock
    -- tick looks like: now is not later than the old token.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @NewUpdatedAt DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Render', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = 'Send',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be later than the old token';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50005 and changes nothing when the token is stale and nobody claimed the item since]
AS
BEGIN
    -- The caller claimed the item at 08:00:04 and the token moved on without a
    -- new claim (an Extend_, or a report the caller already made): no attempt
    -- started after the caller's token, so the item was not taken over.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StaleToken DATETIME2(7) = '2024-03-01T08:00:04';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration)
    VALUES (@Key, @StaleToken, 1, 'Send', N'worker-a', NULL, NULL);
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.[Step],
        a.Outcome,
        a.Duration,
        a.Response,
        a.Error
    INTO #BeforeAttempt
    FROM dbo.NotificationAttempt AS a;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @StaleToken,
            @Status = 'Completed',
            @Response = N'250 2.0.0 OK';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50005, @Actual = @ErrorNumber;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.[Step],
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
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50010 and changes nothing when another worker claimed the item since]
AS
BEGIN
    -- worker-a claimed the item at 08:00:05; its lease expired and worker-b
    -- claimed it again at 08:10:05 (ending worker-a's attempt as abandoned).
    -- worker-a's late report must not overwrite worker-b's attempt.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @OldToken DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @NewToken DATETIME2(7) = '2024-03-01T08:10:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @LeaseUntil DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
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
        'Processing',
        'Send',
        2,
        N'',
        N'',
        @StartedAt,
        NULL,
        @Key,
        @NewToken,
        N'worker-b',
        @LeaseUntil
    );
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES
    (@Key, @OldToken, 1, 'Send', N'worker-a', 'Error', NULL, N'', N'abandoned: the lease expired'),
    (@Key, @NewToken, 2, 'Send', N'worker-b', NULL, NULL, N'', N'');
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt,
        n.LockedBy,
        n.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS n;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
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
            @UpdatedAt = @OldToken,
            @Status = 'Completed',
            @Response = N'250 2.0.0 OK';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50010, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%worker-b%', @Actual = @ErrorMessage;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt,
        n.LockedBy,
        n.LeaseUntil
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'dbo.Notification';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
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
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx completes the item when its lease expired but nobody claimed it since]
AS
BEGIN
    -- A slow worker reports after its lease ran out; no other worker took the
    -- item over, so its token is still current and the report stands.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(MINUTE, -10, SYSUTCDATETIME());
    DECLARE @LeaseUntil DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_Notification_utxTests.FakeQueue;
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
        'Processing',
        'Send',
        1,
        N'',
        N'',
        @StartedAt,
        NULL,
        @Key,
        @Token,
        N'worker-a',
        @LeaseUntil
    );
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration)
    VALUES (@Key, @Token, 1, 'Send', N'worker-a', NULL, NULL);

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'250 2.0.0 OK';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Status = n.[Status]
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    SELECT @Outcome = a.Outcome
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50004 when no item has the key]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @OtherKey DATETIME2(7) = '2024-03-01T08:00:01';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50004;

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @OtherKey,
        @UpdatedAt = @Token,
        @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 when EnqueuedAt is NULL]
AS
BEGIN
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@EnqueuedAt%';

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = NULL,
        @UpdatedAt = @Token,
        @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 when UpdatedAt is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@UpdatedAt%';

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = NULL,
        @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 when Status is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Status%';

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = NULL;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 when Status is no state of dboQueueStatus]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Status%';

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Done';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 when Step is blank]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Render', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Step%';

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = '   ';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 when Step is over 50 characters]
AS
BEGIN
    -- The parameter is wider than the column: a longer step must be refused,
    -- not cut to fit.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @Step VARCHAR(400) = REPLICATE('s', 51);
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Render', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Step%';

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = @Step;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx gives the attempt back when a processing item reports Pending]
AS
BEGIN
    -- A worker shutting down releases what it has not worked on: the attempt does not count.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @LeaseUntil DATETIME2(7) = DATEADD(MINUTE, 4, SYSUTCDATETIME());
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @ItemLeaseUntil DATETIME2(7);
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @Error NVARCHAR(MAX);
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], AttemptNum, StartedAt, ScheduledFor, UpdatedAt, LockedBy, LeaseUntil
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 2, @StartedAt, @Key, @Token, N'worker-a', @LeaseUntil);
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy)
    VALUES (@Key, @Token, 2, N'worker-a');

    EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';

    SELECT
        @Status = x.[Status],
        @AttemptNum = x.AttemptNum,
        @ItemLeaseUntil = x.LeaseUntil,
        @ScheduledFor = x.ScheduledFor
    FROM dbo.Notification AS x
    WHERE x.EnqueuedAt = @Key;
    SELECT
        @Outcome = a.Outcome,
        @Error = a.Error
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'the attempt is given back';
    IF @ItemLeaseUntil IS NOT NULL EXEC tSQLt.Fail @Message0 = N'the lease must be cleared';
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @ScheduledFor, @Message = N'due as it was';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Outcome, @Message = N'the attempt ends as Pending';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'released unworked by its worker', @Actual = @Error, @Message = N'the attempt says why';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50006 and changes nothing when a pending item reports Completed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Pending', NULL, 0, N'', N'', NULL, NULL, @Key, @Key);
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Key,
            @Status = 'Completed';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50006, @Actual = @ErrorNumber;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50006 and changes nothing when an error item reports Completed]
AS
BEGIN
    -- An item waiting for its retry has no attempt running: only a claim
    -- (Processing) may follow, not an outcome.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = '2024-03-01T08:00:01';
    DECLARE @RetryAt DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Error', 'Send', 1, N'', N'451 try later', @StartedAt, 4000, @RetryAt, @Token);
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50006, @Actual = @ErrorNumber;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50008 and changes nothing when the item is Completed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = '2024-03-01T08:00:01';
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Completed', 'Send', 1, N'250 OK', N'', @StartedAt, 4000, @Key, @Token);
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed',
            @Response = N'250 OK again';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50008, @Actual = @ErrorNumber;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx fails the item when an Error outcome comes on the last attempt]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @RetryAt DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- The third claim of three (notification.maxAttempts' default).
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 3, N'', N'', @StartedAt, NULL, @Key, @Token);
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration)
    VALUES (@Key, @Token, 3, 'Send', N'worker-a', NULL, NULL);

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'451 try later',
        @ScheduledFor = @RetryAt;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = n.[Status],
        @Error = n.Error,
        @Duration = n.Duration,
        @ScheduledFor = n.ScheduledFor
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'451 try later', @Actual = @Error, @Message = N'Error';
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @ScheduledFor, @Message = N'a failed item is not rescheduled';
    IF @Duration IS NULL OR @Duration < 0
        EXEC tSQLt.Fail @Message0 = N'the ended attempt must record its Duration';
    SELECT @Outcome = a.Outcome
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx schedules a retry and keeps the step when an Error outcome has attempts left]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @RetryAt DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- The first attempt failed at step Send: the retry resumes there.
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'451 try later',
        @ScheduledFor = @RetryAt;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = n.[Status],
        @Step = n.[Step],
        @Error = n.Error,
        @Duration = n.Duration,
        @ScheduledFor = n.ScheduledFor
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Send', @Actual = @Step, @Message = N'Step is kept';
    EXEC tSQLt.AssertEqualsString @Expected = N'451 try later', @Actual = @Error, @Message = N'Error';
    EXEC tSQLt.AssertEquals @Expected = @RetryAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor';
    IF @Duration IS NULL OR @Duration < 0
        EXEC tSQLt.Fail @Message0 = N'the ended attempt must record its Duration';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx retries after the base backoff when the first attempt ends in Error without ScheduledFor]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.SetBackoffWithoutJitter;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'451 try later';
    SET @After = SYSUTCDATETIME();

    SELECT
        @Status = n.[Status],
        @ScheduledFor = n.ScheduledFor
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    -- The report's own "now" lies between @Before and @After: the retry is due 60 s after it.
    IF @ScheduledFor IS NULL OR @ScheduledFor < DATEADD(SECOND, 60, @Before) OR @ScheduledFor > DATEADD(SECOND, 60, @After)
        EXEC tSQLt.Fail @Message0 = N'after a first attempt the retry is due backoffBaseMs (60 s) after the report';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx doubles the backoff when an Error outcome on the second attempt has no ScheduledFor]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.SetBackoffWithoutJitter;
    -- The second claim of three: attempts are left, so the item stays in Error.
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 2, N'', N'', @StartedAt, NULL, @Key, @Token);

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'451 try later';
    SET @After = SYSUTCDATETIME();

    SELECT
        @Status = n.[Status],
        @ScheduledFor = n.ScheduledFor
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
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
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @RetryAt DATETIME2(7) = DATEADD(SECOND, 5, SYSUTCDATETIME());
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC Modify_Notification_utxTests.SetBackoffWithoutJitter;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @Error = N'451 try later',
        @ScheduledFor = @RetryAt;

    SELECT @ScheduledFor = n.ScheduledFor
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @RetryAt, @Actual = @ScheduledFor, @Message = N'ScheduledFor';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx ends the open attempt and clears the lease when a processing item reports an outcome]
AS
BEGIN
    -- An earlier attempt (already ended) and the open one: only the open one ends.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @EarlierClaim DATETIME2(7) = '2024-03-01T08:00:02';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @LeaseUntil DATETIME2(7) = DATEADD(MINUTE, 4, SYSUTCDATETIME());
    DECLARE @Duration BIGINT;
    DECLARE @ItemLeaseUntil DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
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
        'Processing',
        'Render',
        2,
        N'',
        N'timeout',
        @StartedAt,
        1200,
        @Key,
        @Token,
        N'worker-a',
        @LeaseUntil
    );
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES
    (@Key, @EarlierClaim, 1, 'Render', N'worker-z', 'Error', 1200, N'', N'timeout'),
    (@Key, @Token, 2, 'Render', N'worker-a', NULL, NULL, N'', N'');

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Step = 'Send',
        @Response = N'250 2.0.0 OK',
        @Error = N'1 recipient deferred';

    SELECT
        @Duration = n.Duration,
        @ItemLeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @ItemLeaseUntil, @Message = N'the lease is cleared';
    IF @Duration IS NULL OR @Duration < 4000
        EXEC tSQLt.Fail @Message0 = N'the item''s Duration must be the milliseconds since StartedAt';
    SELECT
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
    INSERT INTO #Expected (StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error)
    VALUES
    (@EarlierClaim, 1, 'Render', N'worker-z', 'Error', 1200, N'', N'timeout'),
    (@Token, 2, 'Send', N'worker-a', 'Completed', @Duration, N'250 2.0.0 OK', N'1 recipient deferred');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.NotificationAttempt';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the step and renews the lease when a processing item advances a step]
AS
BEGIN
    -- A step advance is proof of life: the lease runs leaseSeconds (here 120) from
    -- the report, and the attempt stays open with the step reached.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @OldLease DATETIME2(7) = DATEADD(SECOND, 10, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @NewUpdatedAt DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @AttemptStep VARCHAR(50);
    DECLARE @AttemptOutcome VARCHAR(20);
    DECLARE @AttemptDuration BIGINT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt) VALUES ('notification.leaseSeconds', 120);
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
        'Processing',
        'Render',
        1,
        N'',
        N'',
        @StartedAt,
        NULL,
        @Key,
        @Token,
        N'worker-a',
        @OldLease
    );
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration)
    VALUES (@Key, @Token, 1, 'Render', N'worker-a', NULL, NULL);

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = 'Send',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = n.[Status],
        @Step = n.[Step],
        @Duration = n.Duration,
        @UpdatedAt = n.UpdatedAt,
        @LeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Send', @Actual = @Step, @Message = N'Step';
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
    EXEC tSQLt.AssertEqualsString @Expected = 'Send', @Actual = @AttemptStep, @Message = N'the attempt''s Step';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @AttemptOutcome, @Message = N'the attempt stays open';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @AttemptDuration, @Message = N'the attempt''s Duration';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the email channel response when EmailResponse is given]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage, Response, Error)
    VALUES (@Key, N'alice@example.com', N'en', N'', N'an earlier error');

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @EmailResponse = N'250 2.0.0 OK';

    SELECT
        e.EnqueuedAt,
        e.EmailTo,
        e.Response,
        e.Error
    INTO #Actual
    FROM dbo.Notification_Email AS e;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.EmailTo,
        a.Response,
        a.Error
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, EmailTo, Response, Error)
    VALUES (@Key, N'alice@example.com', N'250 2.0.0 OK', N'an earlier error');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the email channel error when EmailError is given]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage, Response, Error)
    VALUES (@Key, N'alice@example.com', N'en', N'queued', N'');

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Error',
        @EmailError = N'550 mailbox unavailable';

    SELECT
        e.EnqueuedAt,
        e.EmailTo,
        e.Response,
        e.Error
    INTO #Actual
    FROM dbo.Notification_Email AS e;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.EmailTo,
        a.Response,
        a.Error
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, EmailTo, Response, Error)
    VALUES (@Key, N'alice@example.com', N'queued', N'550 mailbox unavailable');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx records the SMS channel response when SmsResponse is given]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @Response NVARCHAR(MAX);
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber, Response, Error)
    VALUES (@Key, '+14155550123', N'', N'');

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @SmsResponse = N'accepted';

    SELECT @Response = s.Response
    FROM dbo.Notification_Sms AS s
    WHERE s.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = N'accepted', @Actual = @Response;
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50007 and changes nothing when SmsResponse is given without an SMS channel]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_Notification_utxTests.FakeQueue;
    -- An e-mail-only notification.
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Processing', 'Send', 1, N'', N'', @StartedAt, NULL, @Key, @Token);
    INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage, Response, Error)
    VALUES (@Key, N'alice@example.com', N'en', N'', N'');
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed',
            @SmsResponse = N'accepted';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%SMS%', @Actual = @ErrorMessage;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.Response,
        n.Error,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Sms';
END;
GO
--[@tSQLt:NoTransaction]('Modify_Notification_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50002 when no transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    EXEC Modify_Notification_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50002;

    EXEC dbo.Modify_Notification_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx starts the attempts again when a Failed item goes back to Pending]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum SMALLINT;
    DECLARE @Duration BIGINT;
    DECLARE @ScheduledFor DATETIME2(7);
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Failed', 'Send', 3, N'', N'timeout', @Key, 5000, @Key, @Token);

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';
    SET @After = SYSUTCDATETIME();

    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @Duration = n.Duration,
        @ScheduledFor = n.ScheduledFor
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'a fresh budget';
    EXEC tSQLt.AssertEquals @Expected = 5000, @Actual = @Duration, @Message = N'the last attempt''s Duration, not the wait since';
    IF @ScheduledFor IS NULL OR @ScheduledFor < @Before OR @ScheduledFor > @After
        EXEC tSQLt.Fail @Message0 = N'without @ScheduledFor a retry by hand is due at the time of the report';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50011 and changes nothing when a Failed item returns to Pending and its DedupKey is taken]
AS
BEGIN
    -- The failed item left the dedup index when it failed; the same request was
    -- enqueued again since and is still Pending. A retry by hand would give the
    -- key two unfinished items.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Token DATETIME2(7) = '2024-03-01T08:00:05';
    DECLARE @Holder DATETIME2(7) = '2024-03-01T08:01:00';
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
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
        DedupKey
    )
    VALUES
    (@Key, 'ResetPassword', 'Failed', 'Send', 3, N'', N'timeout', @Key, 5000, @Key, @Token, N'reset:42'),
    (@Holder, 'ResetPassword', 'Pending', NULL, 0, N'', N'', NULL, NULL, @Holder, @Holder, N'reset:42');
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50011, @Actual = @ErrorNumber;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
END;
GO
CREATE PROCEDURE Modify_Notification_utxTests.[test Modify_Notification_utx raises 50006 and changes nothing when a pending item reports Processing]
AS
BEGIN
    -- Pending -> Processing is a claim's move (a row of dbo.QueueTransition), not
    -- a report's: only Next_ starts an attempt.
    DECLARE @Key DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @ErrorNumber INT;
    EXEC Modify_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, Response, Error, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'ResetPassword', 'Pending', NULL, 0, N'', N'', NULL, NULL, @Key, @Key);
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.StartedAt,
        n.LeaseUntil,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    BEGIN TRY
        EXEC dbo.Modify_Notification_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Key,
            @Status = 'Processing',
            @Step = 'Send';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50006, @Actual = @ErrorNumber;
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.StartedAt,
        n.LeaseUntil,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.NotificationAttempt';
END;
GO

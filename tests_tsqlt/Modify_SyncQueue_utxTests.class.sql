SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_SyncQueue_utxTests';
GO
-- Each test inserts its item with a fixed past key and token; a claimed one started two seconds
-- ago. The expected row is the row before the call with the expected changes applied, so every
-- column the report must not touch is checked too; Duration depends on the clock and is checked
-- on its own. dbo.AppSettings is faked empty where the attempt limit matters (default 3).
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx completes the item when Completed is reported]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.EntityKey,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    EXEC @RetCode = dbo.Modify_SyncQueue_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'{"synced":true}',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be returned, later than the old token';
    UPDATE #Expected
    SET
        [Status] = 'Completed',
        Response = N'{"synced":true}',
        UpdatedAt = @NewUpdatedAt;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.EntityKey,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Duration = q.Duration FROM dbo.SyncQueue AS q;
    IF @Duration IS NULL OR @Duration < 2000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt (at least 2000)';
END;
GO
-- The test catches the error itself, to assert afterwards that the row did not change.
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50005 when the token is stale]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.EntityKey,
        q.Payload,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    BEGIN TRY
        -- the token of an earlier read: another worker has changed the item since
        EXEC dbo.Modify_SyncQueue_utx
            @EnqueuedAt = @Key,
            @UpdatedAt = '2024-01-01T00:00:04',
            @Status = 'Completed',
            @Response = N'{"synced":true}';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 50005, @Actual = @ErrorNumber;
    SELECT
        q.EnqueuedAt,
        q.[Type],
        q.EntityKey,
        q.Payload,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.Duration,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50004 when no item has the key]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        '2024-01-01T00:00:01', 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now),
        DATEADD(MINUTE, -5, @Now), @Token
    );
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50004;

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = '2024-01-01T00:00:02', @UpdatedAt = @Token, @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50007 when the key is NULL]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@EnqueuedAt and @UpdatedAt%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = NULL, @UpdatedAt = '2024-01-01T00:00:05', @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50007 when the token is NULL]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@EnqueuedAt and @UpdatedAt%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = '2024-01-01T00:00:01', @UpdatedAt = NULL, @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50007 when the Status is NULL]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Status must be one of%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = NULL;
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50007 when the Status is unknown]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Status must be one of%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Done';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50007 when the Step is blank]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Step must be 1 to 50 characters%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Processing', @Step = ' ';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50007 when the Step is over 50 characters]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    -- one character more than dbo.QueueStep holds: it must be refused, not cut
    DECLARE @Step VARCHAR(400) = REPLICATE('x', 51);
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@Step must be 1 to 50 characters%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Processing', @Step = @Step;
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50006 when Processing goes back to Pending]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 50006,
        @ExpectedMessagePattern = N'%cannot go from Processing to Pending%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50006 when Pending reports Completed]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- never claimed: no worker may complete it
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'CustomerSync', N'C-1', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -5, @Now), @Token);
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 50006,
        @ExpectedMessagePattern = N'%cannot go from Pending to Completed%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50008 when the item is Completed]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Completed', 'Push', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 50008, @ExpectedMessagePattern = N'%is Completed and can no longer change%';

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Error', @Error = N'late report';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx fails the item when its last attempt errs]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- empty: syncqueue.maxAttempts takes its default, 3
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Push', 3, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    EXEC dbo.Modify_SyncQueue_utx
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
        UpdatedAt = @NewUpdatedAt;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Duration = q.Duration FROM dbo.SyncQueue AS q;
    IF @Duration IS NULL OR @Duration < 2000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt (at least 2000)';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx reschedules an Error when attempts are left]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetryAt dbo.[_Timestamp] = DATEADD(MINUTE, 10, SYSUTCDATETIME());
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- empty: syncqueue.maxAttempts takes its default, 3
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Push', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    -- @Step NULL: the next attempt resumes at the recorded step
    EXEC dbo.Modify_SyncQueue_utx
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
        UpdatedAt = @NewUpdatedAt;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.[Step],
        q.AttemptNum,
        q.Response,
        q.Error,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Duration = q.Duration FROM dbo.SyncQueue AS q;
    IF @Duration IS NULL OR @Duration < 2000
        EXEC tSQLt.Fail @Message0 = N'Duration must be the milliseconds since StartedAt (at least 2000)';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx retries an Error now when no retry time is given]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @ScheduledFor dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Push', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );

    EXEC dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Error', @Error = N'HTTP 503';
    SET @After = SYSUTCDATETIME();

    SELECT @ScheduledFor = q.ScheduledFor FROM dbo.SyncQueue AS q;
    IF @ScheduledFor IS NULL OR @ScheduledFor < @Now OR @ScheduledFor > @After
        EXEC tSQLt.Fail @Message0 = N'an Error without @ScheduledFor must be due at the time of the report';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx records a new Step when it stays Processing]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
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
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    EXEC @RetCode = dbo.Modify_SyncQueue_utx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Processing',
        @Step = 'Push',
        @NewUpdatedAt = @NewUpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @NewUpdatedAt IS NULL OR @NewUpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'@NewUpdatedAt must be returned, later than the old token';
    -- the attempt goes on: no Duration yet
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
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_SyncQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx raises 50002 when called outside a transaction]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50002;

    EXEC dbo.Modify_SyncQueue_utx
        @EnqueuedAt = '2024-01-01T00:00:01',
        @UpdatedAt = '2024-01-01T00:00:05',
        @Status = 'Completed';
END;
GO
CREATE PROCEDURE Modify_SyncQueue_utxTests.[test Modify_SyncQueue_utx starts the attempts again when a Failed item goes back to Pending]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum SMALLINT;
    DECLARE @Duration BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'CustomerSync', N'C-1', 'Failed', 'Push', 3, @Key, 5000, @Key, @Token);

    EXEC @RetCode = dbo.Modify_SyncQueue_utx @EnqueuedAt = @Key, @UpdatedAt = @Token, @Status = 'Pending';

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @Duration = q.Duration
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'a fresh budget';
    EXEC tSQLt.AssertEquals @Expected = 5000, @Actual = @Duration, @Message = N'the last attempt''s Duration, not the wait since';
END;
GO

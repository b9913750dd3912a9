SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Extend_SyncQueue_trxTests';
GO
-- The queue, its history (read to tell a takeover from a stale token) and the
-- settings, faked empty so that syncqueue.leaseSeconds is 300 unless a test sets it.
-- In a NoTransaction test the fakes hold the committed rows; tSQLt puts the real
-- tables back after the test.
--
-- The result row cannot be captured here: INSERT ... EXEC runs the procedure inside
-- the INSERT's transaction, where a _trx refuses (735701). The tests assert on the row
-- the call left, and check the result's columns with sys.dm_exec_describe_first_result_set.
CREATE PROCEDURE Extend_SyncQueue_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- One job, by default in Processing on its first attempt, held by worker-1.
CREATE PROCEDURE Extend_SyncQueue_trxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @UpdatedAt DATETIME2(7),
    @LeaseUntil DATETIME2(7),
    @Status VARCHAR(20) = 'Processing',
    @LockedBy NVARCHAR(128) = N'worker-1',
    @AttemptNum SMALLINT = 1
AS
BEGIN
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        [Status],
        [Step],
        AttemptNum,
        StartedAt,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        LockedBy,
        LeaseUntil
    )
    VALUES (
        @EnqueuedAt,
        'CustomerSync',
        N'C-1',
        @Status,
        'Push',
        @AttemptNum,
        @EnqueuedAt,
        @EnqueuedAt,
        @UpdatedAt,
        0,
        @LockedBy,
        @LeaseUntil
    );
END;
GO
-- One attempt of an item; open (Outcome NULL) unless an outcome is given.
CREATE PROCEDURE Extend_SyncQueue_trxTests.AddAttempt
    @EnqueuedAt DATETIME2(7),
    @StartedAt DATETIME2(7),
    @AttemptNum SMALLINT,
    @LockedBy NVARCHAR(128),
    @Outcome VARCHAR(20) = NULL
AS
BEGIN
    INSERT INTO dbo.SyncQueueAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@EnqueuedAt, @StartedAt, @AttemptNum, 'Push', @LockedBy, @Outcome, NULL, N'', N'');
END;
GO
-- Calls the renewal with a missing or bad parameter and asserts that it raised 735707
-- naming it. The checks come before the transaction: nothing is left open.
CREATE PROCEDURE Extend_SyncQueue_trxTests.AssertRefused
    @EnqueuedAt DATETIME2(7),
    @UpdatedAt DATETIME2(7),
    @LeaseSeconds INT,
    @ExpectedPattern NVARCHAR(200),
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @TranCount INT;
    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx
            @EnqueuedAt = @EnqueuedAt,
            @UpdatedAt = @UpdatedAt,
            @LeaseSeconds = @LeaseSeconds;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    SET @TranCount = @@TRANCOUNT;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = @ExpectedPattern, @Actual = @ErrorMessage, @Message = @Case;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = @Case;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Extend_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 1, SYSUTCDATETIME());
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 600;
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx renews the lease and moves the token when the caller holds the item]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(SECOND, 10, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @OpenAttempts INT;
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    -- worker-1 claimed the item at @Token; ten seconds of its lease are left.
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
    EXEC Extend_SyncQueue_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @Token, @AttemptNum = 1, @LockedBy = N'worker-1';

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 600;
    SET @After = SYSUTCDATETIME();
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @LockedBy = q.LockedBy,
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF
        @LeaseUntil IS NULL
        OR @LeaseUntil < DATEADD(SECOND, 600, @Before)
        OR @LeaseUntil > DATEADD(SECOND, 600, @After)
        EXEC tSQLt.Fail @Message0 = N'LeaseUntil must be the time of the call plus @LeaseSeconds (600)';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the renewal must move the token forward';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    -- A renewal is no new attempt: the claim's attempt stays the open one.
    SELECT @OpenAttempts = COUNT(*)
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @Token AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @OpenAttempts, @Message = N'the claim''s attempt';
    SELECT @OpenAttempts = COUNT(*) FROM dbo.SyncQueueAttempt;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @OpenAttempts, @Message = N'attempt rows';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx renews an expired lease when nobody took the item over]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @LockedBy NVARCHAR(128);
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    -- No @LeaseSeconds: the setting gives the length.
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('syncqueue.leaseSeconds', 120, NULL);
    -- The lease ran out a minute ago, but no claim has taken the item since.
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Expired;
    EXEC Extend_SyncQueue_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @Token, @AttemptNum = 1, @LockedBy = N'worker-1';

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @LockedBy = q.LockedBy
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    IF
        @LeaseUntil IS NULL
        OR @LeaseUntil < DATEADD(SECOND, 120, @Before)
        OR @LeaseUntil > DATEADD(SECOND, 120, @After)
        EXEC tSQLt.Fail @Message0 = N'LeaseUntil must be the time of the call plus syncqueue.leaseSeconds (120)';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the renewal must move the token forward';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH),
-- so the _trx's own rollback never runs: the test reads the row inside the transaction
-- the call left open, then rolls it back.
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735710 and changes nothing when the item was claimed again after the token]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @NewToken DATETIME2(7) = '2024-01-01T00:02:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @LockedBy NVARCHAR(128);
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    -- worker-1 claimed it at @OldToken and stalled; its lease ran out and worker-2
    -- claimed it again at @NewToken. worker-1 now tries to renew.
    EXEC Extend_SyncQueue_trxTests.AddItem
        @EnqueuedAt = @Key,
        @UpdatedAt = @NewToken,
        @LeaseUntil = @Lease,
        @LockedBy = N'worker-2',
        @AttemptNum = 2;
    EXEC Extend_SyncQueue_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-1', @Outcome = 'Error';
    EXEC Extend_SyncQueue_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @NewToken, @AttemptNum = 2, @LockedBy = N'worker-2';

    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @OldToken, @LeaseSeconds = 600;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    SELECT
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil,
        @LockedBy = q.LockedBy
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735710, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%worker-2%', @Actual = @ErrorMessage, @Message = N'the new holder';
    EXEC tSQLt.AssertEquals @Expected = @NewToken, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = @Lease, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-2', @Actual = @LockedBy, @Message = N'LockedBy';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735705 and changes nothing when the token is stale]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ClaimToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @RenewedToken DATETIME2(7) = '2024-01-01T00:01:30';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    -- worker-1 claimed the item at @ClaimToken and renewed it to @RenewedToken; it then
    -- passes the claim's token again. No claim came after it: a stale token, no takeover.
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @RenewedToken, @LeaseUntil = @Lease;
    EXEC Extend_SyncQueue_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @ClaimToken, @AttemptNum = 1, @LockedBy = N'worker-1';

    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @ClaimToken, @LeaseSeconds = 600;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SELECT
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = @RenewedToken, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = @Lease, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx accepts the new token and refuses the old one when it renews twice]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(SECOND, 30, SYSUTCDATETIME());
    DECLARE @FirstRetCode INT;
    DECLARE @SecondRetCode INT;
    DECLARE @NewToken DATETIME2(7);
    DECLARE @LatestToken DATETIME2(7);
    DECLARE @LatestLease DATETIME2(7);
    DECLARE @ErrorNumber INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;
    EXEC Extend_SyncQueue_trxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @Token, @AttemptNum = 1, @LockedBy = N'worker-1';

    EXEC @FirstRetCode = dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 60;
    SELECT @NewToken = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC @SecondRetCode = dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @NewToken, @LeaseSeconds = 60;
    SELECT
        @LatestToken = q.UpdatedAt,
        @LatestLease = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    -- Nobody claimed it since: the first token is merely stale.
    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 60;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SELECT
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @FirstRetCode, @Message = N'first renewal';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @SecondRetCode, @Message = N'renewal with the new token';
    IF @LatestToken IS NULL OR @LatestToken <= @NewToken
        EXEC tSQLt.Fail @Message0 = N'each renewal must move the token forward';
    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber, @Message = N'the first token';
    EXEC tSQLt.AssertEquals @Expected = @LatestToken, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = @LatestLease, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735706 and changes nothing when the item is not Processing]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:02:00';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    -- The worker reported Completed and renews with the token the report gave it.
    EXEC Extend_SyncQueue_trxTests.AddItem
        @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = NULL, @Status = 'Completed';

    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 600;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    SELECT
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%Completed%Processing%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'LeaseUntil';

    -- An item back in Error (its attempt failed, a retry is due) is no longer held either.
    SET @ErrorNumber = NULL;
    UPDATE dbo.SyncQueue
    SET [Status] = 'Error'
    WHERE EnqueuedAt = @Key;
    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 600;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SELECT @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735706, @Actual = @ErrorNumber, @Message = N'an Error item';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'an Error item: LeaseUntil';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735704 when no item has the key]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    -- Another item exists, so that only the key can be wrong.
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = '2024-01-01T00:00:02', @UpdatedAt = @Token, @LeaseSeconds = 600;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SELECT
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735704, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the other item: UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = @Lease, @Actual = @LeaseUntil, @Message = N'the other item: LeaseUntil';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735707 and changes nothing when LeaseSeconds is out of range]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @Unchanged INT;
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    EXEC Extend_SyncQueue_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = 0,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'@LeaseSeconds 0';
    EXEC Extend_SyncQueue_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = -5,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'@LeaseSeconds -5';
    EXEC Extend_SyncQueue_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = 86401,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'@LeaseSeconds 86401';
    -- No @LeaseSeconds, and a setting out of range: refused the same way.
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('syncqueue.leaseSeconds', 0, NULL);
    EXEC Extend_SyncQueue_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @LeaseSeconds = NULL,
        @ExpectedPattern = N'%@LeaseSeconds%',
        @Case = N'syncqueue.leaseSeconds 0';

    SET @Unchanged = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE q.EnqueuedAt = @Key AND q.UpdatedAt = @Token AND q.LeaseUntil = @Lease
    );
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unchanged, @Message = N'the item is unchanged';
END;
GO
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735707 and changes nothing when EnqueuedAt or UpdatedAt is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @Unchanged INT;
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    EXEC Extend_SyncQueue_trxTests.AssertRefused
        @EnqueuedAt = NULL,
        @UpdatedAt = @Token,
        @LeaseSeconds = 600,
        @ExpectedPattern = N'%@EnqueuedAt%',
        @Case = N'@EnqueuedAt NULL';
    EXEC Extend_SyncQueue_trxTests.AssertRefused
        @EnqueuedAt = @Key,
        @UpdatedAt = NULL,
        @LeaseSeconds = 600,
        @ExpectedPattern = N'%@UpdatedAt%',
        @Case = N'@UpdatedAt NULL';

    SET @Unchanged = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE q.EnqueuedAt = @Key AND q.UpdatedAt = @Token AND q.LeaseUntil = @Lease
    );
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unchanged, @Message = N'the item is unchanged';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Extend_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Lease DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    EXEC Extend_SyncQueue_trxTests.FakeQueue;
    EXEC Extend_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseUntil = @Lease;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = @Key, @UpdatedAt = @Token, @LeaseSeconds = 600;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
-- The worker reads the key, its new token and the new lease. The metadata comes from
-- SQL Server's analysis of the procedure, without running it.
CREATE PROCEDURE Extend_SyncQueue_trxTests.[test Extend_SyncQueue_trx returns EnqueuedAt UpdatedAt and LeaseUntil when a worker reads its row]
AS
BEGIN
    DECLARE @Columns NVARCHAR(4000);
    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, N' ', r.system_type_name, N' ', r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Extend_SyncQueue_trx @EnqueuedAt = NULL, @UpdatedAt = NULL;', NULL, 0
    ) AS r;

    EXEC tSQLt.AssertEqualsString
        @Expected = N'EnqueuedAt datetime2(7) , UpdatedAt datetime2(7) , LeaseUntil datetime2(7) ',
        @Actual = @Columns;
END;
GO

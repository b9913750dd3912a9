SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_SyncQueue_utxTests';
GO
-- Keys and old tokens are fixed past times; ScheduledFor is relative to now (due: past, waiting: future).
-- The queue and its history, and the settings faked empty so that
-- syncqueue.maxAttempts (3) and syncqueue.leaseSeconds (300) have their
-- documented defaults whatever the database holds. A claim writes the history,
-- whose foreign key would refuse the rows of a faked queue: it is faked too. A fake
-- has no constraints and no indexes: the tests insert every column the claim reads.
CREATE PROCEDURE Next_SyncQueue_utxTests.FakeQueue
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueueAttempt', @ConstraintName = N'PK_SyncQueueAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- No pause and no limit, whatever the database holds; the tests of them add their rows.
    -- Its key applied again, so that the lock a limited claim takes is a key's.
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.QueueControl', @ConstraintName = N'PK_QueueControl';
END;
GO
-- One row of dbo.QueueControl: the queue's ([Type] '') or a type's.
CREATE PROCEDURE Next_SyncQueue_utxTests.SetControl
    @Type VARCHAR(50) = '',
    @IsPaused BIT = 0,
    @TypeLimit SMALLINT = NULL,
    @GroupLimit SMALLINT = NULL
AS
BEGIN
    DELETE FROM dbo.QueueControl
    WHERE [Queue] = N'SyncQueue' AND [Type] = @Type;
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason, TypeLimit, GroupLimit)
    VALUES (
        N'SyncQueue',
        @Type,
        @IsPaused,
        CASE WHEN @IsPaused = 1 THEN N'ann' END,
        CASE WHEN @IsPaused = 1 THEN CAST('2024-01-01' AS DATETIME2(7)) END,
        CASE WHEN @IsPaused = 1 THEN N'the relay is down' END,
        @TypeLimit,
        @GroupLimit
    );
END;
GO
-- The job types, faked with the two the tests use, for the tests of @Type
-- (CustomerSync, the type AddItem gives, and InventorySync).
CREATE PROCEDURE Next_SyncQueue_utxTests.FakeTypes
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('CustomerSync'), ('InventorySync');
END;
GO
-- One sync job with every column the claim reads. ScheduledFor and UpdatedAt
-- default to the key (due long ago); StartedAt is the key once an attempt was made.
CREATE PROCEDURE Next_SyncQueue_utxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @Status VARCHAR(20) = 'Pending',
    @AttemptNum SMALLINT = 0,
    @ScheduledFor DATETIME2(7) = NULL,
    @Priority SMALLINT = 0,
    @GroupKey NVARCHAR(100) = NULL,
    @LockedBy NVARCHAR(128) = NULL,
    @LeaseUntil DATETIME2(7) = NULL,
    @UpdatedAt DATETIME2(7) = NULL,
    @Step VARCHAR(50) = NULL,
    @Type VARCHAR(50) = 'CustomerSync'
AS
BEGIN
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        Payload,
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
        @Type,
        N'C-' + CAST(DATEPART(SECOND, @EnqueuedAt) AS NVARCHAR(2)),
        NULL,
        @Status,
        @Step,
        @AttemptNum,
        N'',
        N'',
        CASE WHEN @AttemptNum > 0 THEN @EnqueuedAt END,
        NULL,
        ISNULL(@ScheduledFor, @EnqueuedAt),
        ISNULL(@UpdatedAt, @EnqueuedAt),
        @Priority,
        @GroupKey,
        NULL,
        @LockedBy,
        @LeaseUntil
    );
END;
GO
-- One attempt of an item; open (Outcome NULL) unless an outcome is given.
CREATE PROCEDURE Next_SyncQueue_utxTests.AddAttempt
    @EnqueuedAt DATETIME2(7),
    @StartedAt DATETIME2(7),
    @AttemptNum SMALLINT,
    @LockedBy NVARCHAR(128),
    @Outcome VARCHAR(20) = NULL,
    @Step VARCHAR(50) = NULL
AS
BEGIN
    INSERT INTO dbo.SyncQueueAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@EnqueuedAt, @StartedAt, @AttemptNum, @Step, @LockedBy, @Outcome, NULL, N'', N'');
END;
GO
-- The seconds of the keys in @Claimed, in its order, as a list such as '7,1,3'
-- (every test key is a second of 2024-01-01T00:00); '' when @Claimed is NULL.
CREATE PROCEDURE Next_SyncQueue_utxTests.ClaimedSeconds
    @Claimed NVARCHAR(MAX),
    @Seconds VARCHAR(400) OUTPUT
AS
BEGIN
    SELECT
        @Seconds = ISNULL(
            STRING_AGG(CAST(DATEPART(SECOND, c.EnqueuedAt) AS VARCHAR(2)), ',')
            WITHIN GROUP (ORDER BY CAST(j.[key] AS INT)),
            ''
        )
    FROM OPENJSON(@Claimed) AS j
    CROSS APPLY OPENJSON (j.[value]) WITH (EnqueuedAt DATETIME2(7)) AS c;
END;
GO
-- Calls the claim with a bad @BatchSize and asserts that it raised 735707.
CREATE PROCEDURE Next_SyncQueue_utxTests.AssertBatchSizeRefused
    @BatchSize INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    BEGIN TRY
        EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = @BatchSize;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@BatchSize%', @Actual = @ErrorMessage, @Message = @Case;
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the earliest due item when several are Pending]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @FiveMinutesAgo dbo.[_Timestamp] = DATEADD(MINUTE, -5, @Now);
    DECLARE @TenMinutesAgo dbo.[_Timestamp] = DATEADD(MINUTE, -10, @Now);
    DECLARE @Key1 dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Key2 dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @Key3 dbo.[_Timestamp] = '2024-01-01T00:00:03';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Before dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @StartedAt dbo.[_Timestamp];
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Key1 is the oldest key but due later; Key2 and Key3 are due at the same time: the key breaks the tie.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key1, @ScheduledFor = @FiveMinutesAgo, @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key2, @ScheduledFor = @TenMinutesAgo, @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key3, @ScheduledFor = @TenMinutesAgo, @UpdatedAt = @OldToken;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = @Key2, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT @StartedAt = q.StartedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key2;
    -- StartedAt is whole microseconds, so it may round a fraction below @Before.
    IF @StartedAt IS NULL OR @StartedAt < CAST(@Before AS DATETIME2(6)) OR @StartedAt > CAST(@After AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt to the time of the claim';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the claim must move the token forward';
    -- The claimed row carries the new token; the others are untouched.
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.StartedAt,
        a.UpdatedAt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], AttemptNum, StartedAt, UpdatedAt)
    VALUES
    (@Key1, 'Pending', 0, NULL, @OldToken),
    (@Key2, 'Processing', 1, @StartedAt, @UpdatedAt),
    (@Key3, 'Pending', 0, NULL, @OldToken);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims an Error item when it is due again]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @OneMinuteAgo dbo.[_Timestamp] = DATEADD(MINUTE, -1, @Now);
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Error',
        @AttemptNum = 1,
        @ScheduledFor = @OneMinuteAgo,
        @UpdatedAt = @OldToken,
        @Step = 'Fetch';

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum, @Message = N'AttemptNum';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims nothing when ScheduledFor is in the future]
AS
BEGIN
    DECLARE @Later dbo.[_Timestamp] = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @Attempts INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- a retried item waiting for its time, and a new item scheduled for later
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01',
        @Status = 'Error',
        @AttemptNum = 1,
        @ScheduledFor = @Later,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02', @ScheduledFor = @Later, @UpdatedAt = @OldToken;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @UpdatedAt, @Message = N'@UpdatedAt';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT @Attempts = COUNT(*) FROM dbo.SyncQueueAttempt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims a retried item again only when its ScheduledFor has passed]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Later dbo.[_Timestamp] = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- An attempt failed and the worker asked for a retry in an hour.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Error',
        @AttemptNum = 1,
        @ScheduledFor = @Later,
        @UpdatedAt = '2024-01-01T00:01:02',
        @Step = 'Push';

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'a retry must wait until it is due';

    UPDATE dbo.SyncQueue
    SET ScheduledFor = DATEADD(MINUTE, -5, SYSUTCDATETIME())
    WHERE EnqueuedAt = @Key;
    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT;
    EXEC tSQLt.AssertEquals
        @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'a retry must be claimed once it is due';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx skips items and fails the Error ones when their attempts are spent]
AS
BEGIN
    DECLARE @DueFirst dbo.[_Timestamp] = DATEADD(MINUTE, -10, SYSUTCDATETIME());
    DECLARE @DueNext dbo.[_Timestamp] = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @SpentPending dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @SpentError dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @OneLeft dbo.[_Timestamp] = '2024-01-01T00:00:03';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    -- the settings faked empty: syncqueue.maxAttempts takes its default, 3
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- The two that spent their 3 attempts are due first, so only the attempt limit keeps
    -- them from being claimed; the last has one attempt left.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @SpentPending, @AttemptNum = 3, @ScheduledFor = @DueFirst, @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @SpentError,
        @Status = 'Error',
        @AttemptNum = 3,
        @ScheduledFor = @DueFirst,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @OneLeft,
        @Status = 'Error',
        @AttemptNum = 2,
        @ScheduledFor = @DueNext,
        @UpdatedAt = @OldToken;

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @OneLeft, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], AttemptNum)
    VALUES
    (@SpentPending, 'Pending', 3),
    (@SpentError, 'Failed', 3),
    (@OneLeft, 'Processing', 3);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims an item at 3 attempts when maxAttempts is 5]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @TenMinutesAgo dbo.[_Timestamp] = DATEADD(MINUTE, -10, @Now);
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('syncqueue.maxAttempts', 5, NULL);
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Error',
        @AttemptNum = 3,
        @ScheduledFor = @TenMinutesAgo,
        @UpdatedAt = '2024-01-01T00:00:05';

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @AttemptNum, @Message = N'AttemptNum';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx skips items when they are neither Pending nor Error]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @OneMinuteAgo dbo.[_Timestamp] = DATEADD(MINUTE, -1, @Now);
    DECLARE @InAnHour dbo.[_Timestamp] = DATEADD(HOUR, 1, @Now);
    DECLARE @Due dbo.[_Timestamp] = DATEADD(MINUTE, -10, SYSUTCDATETIME());
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Pending dbo.[_Timestamp] = '2024-01-01T00:00:09';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Every other state, all due before the one Pending item, with attempts left. The
    -- item in Processing is another worker's, and its lease runs for an hour yet.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01',
        @Status = 'Completed',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02',
        @Status = 'Processing',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @LockedBy = N'worker-2',
        @LeaseUntil = @InAnHour,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03',
        @Status = 'Failed',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04',
        @Status = 'Cancelled',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05',
        @Status = 'Paused',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:06',
        @Status = 'Terminated',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:07',
        @Status = 'PartiallyCompleted',
        @AttemptNum = 1,
        @ScheduledFor = @Due,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Pending, @ScheduledFor = @OneMinuteAgo, @UpdatedAt = @OldToken;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Expected
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt <> @Pending;

    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1', @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Pending, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.UpdatedAt,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt <> @Pending;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx returns 0 and NULL outputs when nothing is due]
AS
BEGIN
    -- Values left over from an earlier claim must not come back: the procedure resets them.
    DECLARE @EnqueuedAt dbo.[_Timestamp] = '2000-01-01';
    DECLARE @UpdatedAt dbo.[_Timestamp] = '2000-01-01';
    DECLARE @Claimed NVARCHAR(MAX) = N'[]';
    DECLARE @RetCode INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;

    EXEC @RetCode = dbo.Next_SyncQueue_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @UpdatedAt, @Message = N'@UpdatedAt';
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'@Claimed';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx records a LockedBy of 128 characters when it is at the limit]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @LockedBy NVARCHAR(400) = REPLICATE(N'w', 128);
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @RowLockedBy NVARCHAR(400);
    DECLARE @AttemptLockedBy NVARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = @LockedBy, @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @RowLockedBy = q.LockedBy
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @AttemptLockedBy = a.LockedBy
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = @LockedBy, @Actual = @RowLockedBy, @Message = N'the item''s LockedBy';
    EXEC tSQLt.AssertEqualsString
        @Expected = @LockedBy, @Actual = @AttemptLockedBy, @Message = N'the attempt''s LockedBy';
END;
GO
-- A caller may pass no @LockedBy: its session's items are not handed
-- back to it (a new session would have another @@SPID anyway).
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx hands nothing back when LockedBy is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Holder NVARCHAR(128) = LEFT(ISNULL(HOST_NAME(), N''), 100) + N'/' + CAST(@@SPID AS NVARCHAR(10));
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @AttemptNum INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = @Holder,
        @LeaseUntil = @Later,
        @UpdatedAt = '2024-01-01T00:01:00';

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Next_SyncQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx raises 735702 when called outside a transaction]
AS
BEGIN
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Next_SyncQueue_utx;
END;
GO
-- .NET's TransactionScope defaults to SERIALIZABLE, where SQL Server refuses READPAST:
-- the procedure runs at READ COMMITTED whatever the caller's level.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the earliest due item when the caller runs SERIALIZABLE]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @FiveMinutesAgo dbo.[_Timestamp] = DATEADD(MINUTE, -5, @Now);
    DECLARE @TenMinutesAgo dbo.[_Timestamp] = DATEADD(MINUTE, -10, @Now);
    DECLARE @Key1 dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Key2 dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @Key3 dbo.[_Timestamp] = '2024-01-01T00:00:03';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Before dbo.[_Timestamp];
    DECLARE @After dbo.[_Timestamp];
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @StartedAt dbo.[_Timestamp];
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Key1 is the oldest key but due later; Key2 and Key3 are due at the same time: the key breaks the tie.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key1, @ScheduledFor = @FiveMinutesAgo, @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key2, @ScheduledFor = @TenMinutesAgo, @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key3, @ScheduledFor = @TenMinutesAgo, @UpdatedAt = @OldToken;

    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = @Key2, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT @StartedAt = q.StartedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key2;
    IF @StartedAt IS NULL OR @StartedAt < CAST(@Before AS DATETIME2(6)) OR @StartedAt > CAST(@After AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt to the time of the claim';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the claim must move the token forward';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.StartedAt,
        a.UpdatedAt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], AttemptNum, StartedAt, UpdatedAt)
    VALUES
    (@Key1, 'Pending', 0, NULL, @OldToken),
    (@Key2, 'Processing', 1, @StartedAt, @UpdatedAt),
    (@Key3, 'Pending', 0, NULL, @OldToken);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims by Priority then ScheduledFor then key when several are due]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Order VARCHAR(100) = '';
    DECLARE @Claims INT = 0;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Expected: 3 and 4 (Priority 5, the earliest ScheduledFor, then the key), 2
    -- (Priority 5, due later), 1 (Priority 0), 5 (Priority -1, though due first).
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = '2024-01-01T00:01:00', @Priority = 0;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02', @ScheduledFor = '2024-01-01T00:09:00', @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03', @ScheduledFor = '2024-01-01T00:05:00', @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04', @ScheduledFor = '2024-01-01T00:05:00', @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05', @ScheduledFor = '2024-01-01T00:00:06', @Priority = -1;

    -- One claim at a time, one more than there are items. A NULL @LockedBy never
    -- hands an item back, so each claim takes the next item.
    WHILE @Claims < 6
        BEGIN
            EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT;
            SET @Order = @Order + ISNULL(CAST(DATEPART(SECOND, @EnqueuedAt) AS VARCHAR(2)), '-') + ',';
            SET @Claims = @Claims + 1;
        END;

    EXEC tSQLt.AssertEqualsString @Expected = '3,4,2,1,5,-,', @Actual = @Order, @Message = N'claim order';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the due items of every Priority band when higher bands hold items not yet due]
AS
BEGIN
    DECLARE @Later dbo.[_Timestamp] = DATEADD(MINUTE, 10, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Waiting INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Expected: 2 (Priority 5, the only due one), 3 and 6 (Priority 3, by ScheduledFor),
    -- 5 (Priority 0); 1 and 4 are not due and stay Pending.
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Later, @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02', @ScheduledFor = '2024-01-01T00:05:00', @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03', @ScheduledFor = '2024-01-01T00:01:00', @Priority = 3;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04', @ScheduledFor = @Later, @Priority = 3;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05', @ScheduledFor = '2024-01-01T00:00:30', @Priority = 0;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:06', @ScheduledFor = '2024-01-01T00:02:00', @Priority = 3;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2,3,6,5', @Actual = @Seconds, @Message = N'claim order';
    SELECT @Waiting = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE q.[Status] = 'Pending' AND q.EnqueuedAt IN ('2024-01-01T00:00:01', '2024-01-01T00:00:04');
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Waiting, @Message = N'items not due, still Pending';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims by Priority then ScheduledFor across types when Type is NULL]
AS
BEGIN
    DECLARE @Later dbo.[_Timestamp] = DATEADD(MINUTE, 10, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    -- Expected: 3 (CustomerSync, Priority 5, due first of that band), 2 (InventorySync,
    -- Priority 5), 4 (InventorySync, Priority 0, due first), 1; 5 is not due.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = '2024-01-01T00:01:00', @Priority = 0;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02',
        @ScheduledFor = '2024-01-01T00:03:00',
        @Priority = 5,
        @Type = 'InventorySync';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03', @ScheduledFor = '2024-01-01T00:02:00', @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04',
        @ScheduledFor = '2024-01-01T00:00:30',
        @Priority = 0,
        @Type = 'InventorySync';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05', @ScheduledFor = @Later, @Priority = 9, @Type = 'InventorySync';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '3,2,4,1', @Actual = @Seconds, @Message = N'claim order';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx keeps the last error and moves the token when it fails an Error item whose attempts are spent]
AS
BEGIN
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Attempts INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- maxAttempts lowered to 2 after the item's second attempt ended in Error.
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('syncqueue.maxAttempts', 2, NULL);
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key, @Status = 'Error', @AttemptNum = 2, @UpdatedAt = @OldToken;
    UPDATE dbo.SyncQueue
    SET Error = N'HTTP 503 from the relay'
    WHERE EnqueuedAt = @Key;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT
        @Status = q.[Status],
        @Error = q.Error,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @Attempts = COUNT(*) FROM dbo.SyncQueueAttempt;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'HTTP 503 from the relay', @Actual = @Error, @Message = N'Error';
    IF (@UpdatedAt IS NULL OR @UpdatedAt <= @OldToken) EXEC tSQLt.Fail N'the token did not move forward';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'attempt rows';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the due item behind them and fails them when 20 Error items past the limit come first]
AS
BEGIN
    DECLARE @Spent INT = 0;
    DECLARE @Key dbo.[_Timestamp];
    DECLARE @Last dbo.[_Timestamp] = '2024-01-01T00:00:30';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @Failed INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- 20 Error items on their last attempt (the default limit, 3), due before the one
    -- Pending item: more than a claim of one reads (1 + 16).
    WHILE @Spent < 20
        BEGIN
            SET @Key = DATEADD(SECOND, @Spent + 1, '2024-01-01T00:00:00');
            EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key, @Status = 'Error', @AttemptNum = 3;
            SET @Spent = @Spent + 1;
        END;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Last;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @Failed = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE q.[Status] = 'Failed';
    EXEC tSQLt.AssertEquals @Expected = @Last, @Actual = @EnqueuedAt, @Message = N'claimed key';
    -- the first 17 due items of the band (the claim's 1 + 16) were read for the limit
    EXEC tSQLt.AssertEquals @Expected = 17, @Actual = @Failed, @Message = N'items failed';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the next item of a group when it fails the earlier one for spent attempts]
AS
BEGIN
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @Status = 'Error', @AttemptNum = 3, @GroupKey = N'g1';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02', @GroupKey = N'g1';

    -- The first claim fails item 1 (its attempts are spent); item 2 waits behind it until
    -- that is committed, so the next claim takes it.
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 5, @Claimed = @Claimed OUTPUT;
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 5, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2', @Actual = @Seconds, @Message = N'second claim';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx fails a spent group head when 17 later items of its group are due before it]
AS
BEGIN
    DECLARE @Later INT = 0;
    DECLARE @Key dbo.[_Timestamp];
    DECLARE @Head dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Retry dbo.[_Timestamp] = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Status VARCHAR(20);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- The head's retry is due a minute ago; its group's later items were due long before,
    -- more of them than a claim of one reads (1 + 16): only the head can be taken or failed.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Head, @Status = 'Error', @AttemptNum = 3, @ScheduledFor = @Retry, @GroupKey = N'g1';
    WHILE @Later < 17
        BEGIN
            SET @Key = DATEADD(SECOND, @Later + 2, '2024-01-01T00:00:00');
            EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key, @GroupKey = N'g1';
            SET @Later = @Later + 1;
        END;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @Claimed = @Claimed OUTPUT;
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @Claimed = @Claimed OUTPUT;

    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Head;
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'the head';
    EXEC tSQLt.AssertEqualsString @Expected = '2', @Actual = @Seconds, @Message = N'second claim';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx has a claim index keyed Type then Priority DESC then ScheduledFor when the table is deployed]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    SELECT
        @Keys = STRING_AGG(
            c.name + CASE WHEN ic.is_descending_key = 1 THEN N' DESC' ELSE N'' END, N', '
        ) WITHIN GROUP (ORDER BY ic.key_ordinal)
    FROM sys.indexes AS i
    INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
    INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
    WHERE i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND i.name = N'IX_SyncQueue_Due' AND ic.key_ordinal > 0;
    SELECT @Filter = i.filter_definition
    FROM sys.indexes AS i
    WHERE i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND i.name = N'IX_SyncQueue_Due';

    EXEC tSQLt.AssertEqualsString @Expected = N'Type, Priority DESC, ScheduledFor', @Actual = @Keys, @Message = N'keys';
    IF (
        @Filter IS NULL
        OR @Filter NOT LIKE N'%''Pending''%'
        OR @Filter NOT LIKE N'%''Error''%'
        OR @Filter LIKE N'%''Processing''%'
    )
        EXEC tSQLt.Fail N'IX_SyncQueue_Due is not filtered to Pending and Error: ', @Filter;
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx has a health index of the unfinished items only when the table is deployed]
AS
BEGIN
    DECLARE @Filter NVARCHAR(400);
    SELECT @Filter = i.filter_definition
    FROM sys.indexes AS i
    WHERE i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND i.name = N'IX_SyncQueue_Status';

    IF (
        @Filter IS NULL
        OR @Filter NOT LIKE N'%''Pending''%'
        OR @Filter NOT LIKE N'%''Processing''%'
        OR @Filter NOT LIKE N'%''Error''%'
        OR @Filter NOT LIKE N'%''Paused''%'
        OR @Filter LIKE N'%''Completed''%'
        OR @Filter LIKE N'%''Failed''%'
    )
        EXEC tSQLt.Fail N'IX_SyncQueue_Status is not filtered to the unfinished states: ', @Filter;
END;
GO
-- A limited type's claim counts its items in flight from IX_SyncQueue_Lease alone: the
-- index carries their type (the table file, or the migration for databases deployed before).
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx has a lease index that carries the type when the table is deployed]
AS
BEGIN
    DECLARE @Included INT;
    SELECT @Included = COUNT(*)
    FROM sys.indexes AS i
    INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
    INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
    WHERE
        i.object_id = OBJECT_ID(N'dbo.SyncQueue')
        AND i.name = N'IX_SyncQueue_Lease'
        AND c.name = N'Type'
        AND ic.is_included_column = 1;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Included, @Message = N'[Type] included in IX_SyncQueue_Lease';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims only items of that type when Type is given]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @UrgentKey DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Untouched INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    -- The CustomerSync items come first by every rule: higher Priority (1), earlier key
    -- (2), and one whose worker vanished (3), which a claim of any type would take again.
    -- Only 4 and 5 are of the type asked for.
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @Priority = 9;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03',
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = '2024-01-01T00:01:03';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04', @Type = 'InventorySync';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @UrgentKey, @Type = 'InventorySync', @Priority = 1;

    EXEC @RetCode = dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1',
        @BatchSize = 10,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @Claimed = @Claimed OUTPUT,
        @Type = 'InventorySync';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '5,4', @Actual = @Seconds, @Message = N'claimed keys';
    EXEC tSQLt.AssertEquals @Expected = @UrgentKey, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    SELECT @Untouched = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE
        q.[Type] = 'CustomerSync'
        AND q.UpdatedAt = q.EnqueuedAt
        AND q.[Status] = 'Pending'
        AND q.AttemptNum = 0;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Untouched, @Message = N'the Pending items of the other type';
    SELECT @Untouched = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE
        q.EnqueuedAt = '2024-01-01T00:00:03'
        AND q.LockedBy = N'worker-dead'
        AND q.AttemptNum = 1
        AND q.UpdatedAt = '2024-01-01T00:01:03';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Untouched, @Message = N'the abandoned item of the other type';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx raises 735707 and claims nothing when Type is unknown]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Status VARCHAR(20);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    BEGIN TRY
        EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @Type = 'NoSuchType';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Type%', @Actual = @ErrorMessage;
    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
END;
GO
-- Step 3 fails the dead items of every type, since no worker claims them any more;
-- of the caller's own items (it restarted) only those of the type it claims.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx fails the dead items of every type but its own items of that type only when Type is given]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 2, SYSUTCDATETIME());
    DECLARE @Dead DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OwnOther DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @OwnSame DATETIME2(7) = '2024-01-01T00:00:03';
    DECLARE @Due DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    -- On their last attempt (the default maxAttempts is 3): a CustomerSync item whose
    -- worker vanished, and two items the caller, worker-1, holds: one of each type.
    -- A due item of the type asked for is claimed meanwhile.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Dead,
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = '2024-01-01T00:01:01';
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @Dead, @StartedAt = '2024-01-01T00:01:01', @AttemptNum = 3, @LockedBy = N'worker-dead';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @OwnOther,
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-1',
        @LeaseUntil = @Later,
        @UpdatedAt = '2024-01-01T00:01:02';
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @OwnOther, @StartedAt = '2024-01-01T00:01:02', @AttemptNum = 3, @LockedBy = N'worker-1';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @OwnSame,
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-1',
        @LeaseUntil = @Later,
        @UpdatedAt = '2024-01-01T00:01:03',
        @Type = 'InventorySync';
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @OwnSame, @StartedAt = '2024-01-01T00:01:03', @AttemptNum = 3, @LockedBy = N'worker-1';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Due, @Type = 'InventorySync';

    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT, @Type = 'InventorySync';

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '4', @Actual = @Seconds, @Message = N'claimed keys';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.LockedBy,
        q.LeaseUntil
    INTO #Actual
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt <> @Due;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.LockedBy,
        a.LeaseUntil
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, [Status], AttemptNum, LockedBy, LeaseUntil)
    VALUES
    (@Dead, 'Failed', 3, N'worker-dead', NULL),
    (@OwnOther, 'Processing', 3, N'worker-1', @Later),
    (@OwnSame, 'Failed', 3, N'worker-1', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'items';
    SELECT
        a.EnqueuedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome
    INTO #ActualAttempts
    FROM dbo.SyncQueueAttempt AS a;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome
    INTO #ExpectedAttempts
    FROM #ActualAttempts AS a;
    INSERT INTO #ExpectedAttempts (EnqueuedAt, AttemptNum, LockedBy, Outcome)
    VALUES
    (@Dead, 3, N'worker-dead', 'Failed'),
    (@OwnOther, 3, N'worker-1', NULL),
    (@OwnSame, 3, N'worker-1', 'Failed'),
    (@Due, 1, N'worker-1', NULL);
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedAttempts', @Actual = N'#ActualAttempts', @Message = N'attempts';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims an item again when its lease expired and attempts are left]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @RowUpdatedAt DATETIME2(7);
    DECLARE @OldError NVARCHAR(MAX);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Its worker claimed it at @OldToken and vanished; the lease ran out a minute ago.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = @OldToken,
        @Step = 'Push';
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-dead', @Step = 'Push';

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-2',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @LockedBy = q.LockedBy,
        @LeaseUntil = q.LeaseUntil,
        @RowUpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-2', @Actual = @LockedBy, @Message = N'LockedBy';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @RowUpdatedAt, @Message = N'the row carries the new token';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the new token must be later than the old one';
    IF @LeaseUntil IS NULL OR @LeaseUntil < DATEADD(SECOND, 299, @Before)
        EXEC tSQLt.Fail @Message0 = N'the new holder must get a new lease';

    -- The vanished worker's attempt ends as an Error; the new one starts at the new token.
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome
    INTO #Actual
    FROM dbo.SyncQueueAttempt AS a;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome)
    VALUES
    (@Key, @OldToken, 1, 'Push', N'worker-dead', 'Error'),
    (@Key, @UpdatedAt, 2, 'Push', N'worker-2', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'attempts';
    SELECT @OldError = a.Error
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @OldToken;
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'abandoned:%worker-2%', @Actual = @OldError, @Message = N'the abandoned attempt''s Error';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx hands its own Processing item back when the same worker restarts before the lease ends]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OtherKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    -- Two minutes left: well short of the 300 s a new claim gives.
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 2, SYSUTCDATETIME());
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @AttemptNum INT;
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @OtherStatus VARCHAR(20);
    DECLARE @OldOutcome VARCHAR(20);
    DECLARE @OldError NVARCHAR(MAX);
    DECLARE @OpenStartedAt DATETIME2(7);
    DECLARE @OpenCount INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- worker-1 holds the first item for two more minutes, and restarts. A due item waits too.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-1',
        @LeaseUntil = @Later,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-1';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @OtherKey;

    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'its own item comes back first';
    SELECT
        @AttemptNum = q.AttemptNum,
        @LockedBy = q.LockedBy,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @OtherStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @OtherKey;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    IF @LeaseUntil IS NULL OR @LeaseUntil <= @Later
        EXEC tSQLt.Fail @Message0 = N'the claim must give a new lease of 300 s';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Pending', @Actual = @OtherStatus, @Message = N'a batch of one holds the handed-back item only';
    SELECT
        @OldOutcome = a.Outcome,
        @OldError = a.Error
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @OldToken;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @OldOutcome, @Message = N'the old attempt''s Outcome';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'abandoned:%restarted%', @Actual = @OldError, @Message = N'the old attempt''s Error';
    SELECT
        @OpenCount = COUNT(*),
        @OpenStartedAt = MAX(a.StartedAt)
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @OpenCount, @Message = N'open attempts';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @OpenStartedAt, @Message = N'the open attempt starts at the new token';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx leaves an item alone when another worker holds an unexpired lease]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-1',
        @LeaseUntil = @Later,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-1';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.LockedBy,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #Before
    FROM dbo.SyncQueue AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome,
        a.Error
    INTO #AttemptsBefore
    FROM dbo.SyncQueueAttempt AS a;

    EXEC @RetCode = dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-2',
        @BatchSize = 10,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'@Claimed';
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.LockedBy,
        q.LeaseUntil,
        q.UpdatedAt
    INTO #After
    FROM dbo.SyncQueue AS q;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome,
        a.Error
    INTO #AttemptsAfter
    FROM dbo.SyncQueueAttempt AS a;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'items';
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#AttemptsBefore', @Actual = N'#AttemptsAfter', @Message = N'attempts';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx fails an item instead of handing it out when its lease expired on the last attempt]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OtherKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @RowUpdatedAt DATETIME2(7);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- The default syncqueue.maxAttempts is 3: the vanished worker had the last one.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 3, @LockedBy = N'worker-dead';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @OtherKey;

    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-2',
        @BatchSize = 5,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2', @Actual = @Seconds, @Message = N'claimed keys';
    EXEC tSQLt.AssertEquals @Expected = @OtherKey, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @LeaseUntil = q.LeaseUntil,
        @RowUpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @AttemptNum, @Message = N'no attempt is added';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'a Failed item holds no lease';
    IF @RowUpdatedAt IS NULL OR @RowUpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'failing the item must move its token forward';

    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome
    INTO #Actual
    FROM dbo.SyncQueueAttempt AS a;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome)
    VALUES
    (@Key, @OldToken, 3, N'worker-dead', 'Failed'),
    (@OtherKey, @UpdatedAt, 1, N'worker-2', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'attempts';
END;
GO
-- A token ahead of the clock is what a change in the same clock tick as the claim, or
-- a clock that stepped back, leaves: now is not later than the old token.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx moves the token forward when the old token is ahead of the clock]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OldToken DATETIME2(7) = CAST(DATEADD(HOUR, 1, SYSUTCDATETIME()) AS DATETIME2(6));
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @ClaimedToken DATETIME2(7);
    DECLARE @RowUpdatedAt DATETIME2(7);
    DECLARE @OpenStartedAt DATETIME2(7);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key, @UpdatedAt = @OldToken;

    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the new token must be later than the old one';
    SELECT @ClaimedToken = c.UpdatedAt
    FROM OPENJSON (@Claimed) WITH (EnqueuedAt DATETIME2(7), UpdatedAt DATETIME2(7)) AS c
    WHERE c.EnqueuedAt = @Key;
    SELECT @RowUpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @OpenStartedAt = a.StartedAt
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = @UpdatedAt, @Actual = @ClaimedToken, @Message = N'@Claimed''s token';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @RowUpdatedAt, @Message = N'the row carries the new token';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @OpenStartedAt, @Message = N'the open attempt starts at the new token';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims a later group item only when the earlier one is Completed]
AS
BEGIN
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @SecondStatus VARCHAR(20);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Two sync jobs of one group, in order; the later one is the more urgent, which must not matter.
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @First, @GroupKey = N'group:1';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Second, @GroupKey = N'group:1', @Priority = 9;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @EnqueuedAt = @EnqueuedAt OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = @First, @Actual = @EnqueuedAt, @Message = N'the first claim';

    -- Another worker, while worker-1 holds the earlier item in Processing.
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString
        @Expected = NULL, @Actual = @Claimed, @Message = N'the later item waits while the earlier one runs';
    SELECT @SecondStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Second;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @SecondStatus, @Message = N'the later item';

    UPDATE dbo.SyncQueue
    SET
        [Status] = 'Completed',
        LeaseUntil = NULL
    WHERE EnqueuedAt = @First;
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @EnqueuedAt = @EnqueuedAt OUTPUT;
    EXEC tSQLt.AssertEquals
        @Expected = @Second, @Actual = @EnqueuedAt, @Message = N'the later item once the earlier one is Completed';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx skips a later item of a group when an earlier one is unfinished]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Pending INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Four groups whose first item is unfinished: Pending not yet due, Processing under
    -- another worker's lease, Error waiting for its retry, Paused. Their second items
    -- (11 to 14) are due. Item 21 is alone in its group: the claim takes it.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Later, @GroupKey = N'g-pending';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02',
        @Status = 'Processing',
        @AttemptNum = 1,
        @GroupKey = N'g-processing',
        @LockedBy = N'worker-9',
        @LeaseUntil = @Later;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03',
        @Status = 'Error',
        @AttemptNum = 1,
        @ScheduledFor = @Later,
        @GroupKey = N'g-error';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04', @Status = 'Paused', @GroupKey = N'g-paused';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @GroupKey = N'g-pending';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:12', @GroupKey = N'g-processing';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:13', @GroupKey = N'g-error';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:14', @GroupKey = N'g-paused';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:21', @GroupKey = N'g-alone';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '21', @Actual = @Seconds, @Message = N'claimed keys';
    SELECT @Pending = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt BETWEEN '2024-01-01T00:00:11' AND '2024-01-01T00:00:14' AND q.[Status] = 'Pending';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Pending, @Message = N'the later items stay Pending';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the next item of a group when the earlier ones are finished]
AS
BEGIN
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Five groups whose first item is finished, one group per finished state: their
    -- second items (11 to 15) are free.
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @Status = 'Completed', @AttemptNum = 1, @GroupKey = N'g-completed';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02', @Status = 'Failed', @AttemptNum = 3, @GroupKey = N'g-failed';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03', @Status = 'Cancelled', @GroupKey = N'g-cancelled';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04', @Status = 'Terminated', @AttemptNum = 1, @GroupKey = N'g-terminated';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05', @Status = 'PartiallyCompleted', @AttemptNum = 1, @GroupKey = N'g-partial';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @GroupKey = N'g-completed';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:12', @GroupKey = N'g-failed';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:13', @GroupKey = N'g-cancelled';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:14', @GroupKey = N'g-terminated';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:15', @GroupKey = N'g-partial';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '11,12,13,14,15', @Actual = @Seconds, @Message = N'claimed keys';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims each item once and one item per group when BatchSize is 5]
AS
BEGIN
    DECLARE @AbandonedKey DATETIME2(7) = '2024-01-01T00:00:07';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Rows INT;
    DECLARE @DistinctKeys INT;
    DECLARE @FirstToken DATETIME2(7);
    DECLARE @Matching INT;
    DECLARE @Processing INT;
    DECLARE @OpenAttempts INT;
    DECLARE @Leased INT;
    DECLARE @StillPending VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- Groups a (1, 2) and b (3, 4), two items without a group (5, 6), and item 7 whose
    -- worker vanished. Expected: 7 (claimed again, first), then 1, 3, 5, 6; 2 and 4
    -- wait for the earlier items of their groups.
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @GroupKey = N'a';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02', @GroupKey = N'a';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03', @GroupKey = N'b';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04', @GroupKey = N'b';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:05';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:06';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @AbandonedKey,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = '2024-01-01T00:01:07';
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @AbandonedKey, @StartedAt = '2024-01-01T00:01:07', @AttemptNum = 1, @LockedBy = N'worker-dead';

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1',
        @BatchSize = 5,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '7,1,3,5,6', @Actual = @Seconds, @Message = N'@Claimed, in order';
    SELECT
        @Rows = COUNT(*),
        @DistinctKeys = COUNT(DISTINCT c.EnqueuedAt)
    FROM OPENJSON (@Claimed) WITH (EnqueuedAt DATETIME2(7), UpdatedAt DATETIME2(7)) AS c;
    EXEC tSQLt.AssertEquals @Expected = @Rows, @Actual = @DistinctKeys, @Message = N'no key twice in @Claimed';
    SELECT @FirstToken = c.UpdatedAt
    FROM OPENJSON(@Claimed) AS j
    CROSS APPLY OPENJSON (j.[value]) WITH (UpdatedAt DATETIME2(7)) AS c
    WHERE j.[key] = '0';
    EXEC tSQLt.AssertEquals @Expected = @AbandonedKey, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt is the first';
    EXEC tSQLt.AssertEquals @Expected = @FirstToken, @Actual = @UpdatedAt, @Message = N'@UpdatedAt is the first''s';

    -- Every row of @Claimed is a row this worker now holds, with the token @Claimed gives.
    SELECT @Matching = COUNT(*)
    FROM OPENJSON (@Claimed) WITH (EnqueuedAt DATETIME2(7), UpdatedAt DATETIME2(7)) AS c
    INNER JOIN dbo.SyncQueue AS q ON c.EnqueuedAt = q.EnqueuedAt AND c.UpdatedAt = q.UpdatedAt
    WHERE q.[Status] = 'Processing' AND q.LockedBy = N'worker-1';
    SELECT @Processing = COUNT(*)
    FROM dbo.SyncQueue AS q
    WHERE q.[Status] = 'Processing';
    SELECT @OpenAttempts = COUNT(DISTINCT a.EnqueuedAt)
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.Outcome IS NULL AND a.LockedBy = N'worker-1';
    -- Each claimed item started at the time of the claim, holds a lease of the default
    -- 300 s from then, and its open attempt starts at its new token. StartedAt is whole
    -- microseconds, so it may round a fraction below @Before.
    SELECT @Leased = COUNT(*)
    FROM OPENJSON (@Claimed) WITH (EnqueuedAt DATETIME2(7), UpdatedAt DATETIME2(7)) AS c
    INNER JOIN dbo.SyncQueue AS q ON c.EnqueuedAt = q.EnqueuedAt
    INNER JOIN dbo.SyncQueueAttempt AS a ON q.EnqueuedAt = a.EnqueuedAt AND q.UpdatedAt = a.StartedAt
    WHERE
        a.Outcome IS NULL
        AND q.StartedAt >= CAST(@Before AS DATETIME2(6))
        AND q.StartedAt <= CAST(@After AS DATETIME2(6))
        AND q.LeaseUntil = DATEADD(SECOND, 300, q.StartedAt);
    SELECT
        @StillPending = STRING_AGG(CAST(DATEPART(SECOND, q.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY q.EnqueuedAt)
    FROM dbo.SyncQueue AS q
    WHERE q.[Status] = 'Pending';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Matching, @Message = N'rows matching @Claimed';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Processing, @Message = N'items in Processing';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @OpenAttempts, @Message = N'items with an open attempt';
    EXEC tSQLt.AssertEquals
        @Expected = 5, @Actual = @Leased, @Message = N'items with their StartedAt, lease and open attempt';
    EXEC tSQLt.AssertEqualsString @Expected = '2,4', @Actual = @StillPending, @Message = N'items left Pending';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx writes an attempt row for each claim when it claims]
AS
BEGIN
    DECLARE @PendingKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ErrorKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @EarlierStart DATETIME2(7) = '2024-01-01T00:00:30';
    DECLARE @PendingToken DATETIME2(7);
    DECLARE @ErrorToken DATETIME2(7);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    -- A new item, and one whose first attempt (by worker-0) ended in an Error at step Push.
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @PendingKey;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @ErrorKey,
        @Status = 'Error',
        @AttemptNum = 1,
        @UpdatedAt = '2024-01-01T00:01:02',
        @Step = 'Push';
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @ErrorKey,
        @StartedAt = @EarlierStart,
        @AttemptNum = 1,
        @LockedBy = N'worker-0',
        @Outcome = 'Error',
        @Step = 'Push';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 2;

    SELECT @PendingToken = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @PendingKey;
    SELECT @ErrorToken = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @ErrorKey;
    IF @PendingToken <= @PendingKey OR @ErrorToken <= '2024-01-01T00:01:02'
        EXEC tSQLt.Fail @Message0 = N'each claim must move its item''s token forward';
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome
    INTO #Actual
    FROM dbo.SyncQueueAttempt AS a;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.[Step],
        a.LockedBy,
        a.Outcome
    INTO #Expected
    FROM #Actual AS a;
    -- The finished attempt stays as it was; each claim opens one, starting at its new token.
    INSERT INTO #Expected (EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome)
    VALUES
    (@ErrorKey, @EarlierStart, 1, 'Push', N'worker-0', 'Error'),
    (@PendingKey, @PendingToken, 1, NULL, N'worker-1', NULL),
    (@ErrorKey, @ErrorToken, 2, 'Push', N'worker-1', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx sets LeaseUntil to StartedAt plus leaseSeconds when its leaseSeconds setting is 60]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Expected DATETIME2(7);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('syncqueue.leaseSeconds', 60, NULL);
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key;

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1';
    SET @After = SYSUTCDATETIME();

    SELECT
        @StartedAt = q.StartedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    -- StartedAt is whole microseconds, so it may round a fraction below @Before.
    IF @StartedAt IS NULL OR @StartedAt < CAST(@Before AS DATETIME2(6)) OR @StartedAt > CAST(@After AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'StartedAt must be the time of the claim';
    SET @Expected = DATEADD(SECOND, 60, @StartedAt);
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx sets a lease of 300 seconds when no leaseSeconds setting exists]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Expected DATETIME2(7);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1';

    SELECT
        @StartedAt = q.StartedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @StartedAt IS NULL EXEC tSQLt.Fail @Message0 = N'the due item was not claimed';
    SET @Expected = DATEADD(SECOND, 300, @StartedAt);
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx raises 735707 when LockedBy is blank]
AS
BEGIN
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@LockedBy%';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'   ';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx raises 735707 when LockedBy is over 128 characters]
AS
BEGIN
    -- The parameter is wider than dbo.WorkerName: a longer name must be refused, not cut.
    DECLARE @LockedBy NVARCHAR(400) = REPLICATE(N'w', 129);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@LockedBy%';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = @LockedBy;
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx raises 735707 and claims nothing when BatchSize is out of range]
AS
BEGIN
    DECLARE @Status VARCHAR(20);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    EXEC Next_SyncQueue_utxTests.AssertBatchSizeRefused @BatchSize = 0, @Case = N'@BatchSize 0';
    EXEC Next_SyncQueue_utxTests.AssertBatchSizeRefused @BatchSize = -1, @Case = N'@BatchSize -1';
    EXEC Next_SyncQueue_utxTests.AssertBatchSizeRefused @BatchSize = 1001, @Case = N'@BatchSize 1001';
    EXEC Next_SyncQueue_utxTests.AssertBatchSizeRefused @BatchSize = NULL, @Case = N'@BatchSize NULL';

    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx records HOST_NAME and SPID as LockedBy when LockedBy is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Expected NVARCHAR(128) = LEFT(ISNULL(HOST_NAME(), N''), 100) + N'/' + CAST(@@SPID AS NVARCHAR(10));
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @RowLockedBy NVARCHAR(128);
    DECLARE @AttemptLockedBy NVARCHAR(128);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = @Key;

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @RowLockedBy = q.LockedBy
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @AttemptLockedBy = a.LockedBy
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @RowLockedBy, @Message = N'the item''s LockedBy';
    EXEC tSQLt.AssertEqualsString
        @Expected = @Expected, @Actual = @AttemptLockedBy, @Message = N'the attempt''s LockedBy';
END;
GO
-- Pause and limits (dbo.QueueControl): items 1 to 3 of CustomerSync, 11 and 12 of
-- InventorySync; a paused type's items, its expired lease included, stay where they are.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims only the items of the other type when a type is paused]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @LockedBy NVARCHAR(128);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @Type = 'CustomerSync', @IsPaused = 1;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @Priority = 9;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02';
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03',
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @Type = 'InventorySync';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:12', @Type = 'InventorySync';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '11,12', @Actual = @Seconds, @Message = N'claimed keys';
    SELECT @LockedBy = q.LockedBy
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:03';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'worker-dead', @Actual = @LockedBy, @Message = N'the paused type''s expired lease is not taken';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims nothing when the queue is paused]
AS
BEGIN
    DECLARE @Claimed NVARCHAR(MAX);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @IsPaused = 1;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @Type = 'InventorySync';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'any type';
    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-1', @BatchSize = 10, @Type = 'InventorySync', @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'one type';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the items of a type again when it is resumed]
AS
BEGIN
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @Type = 'CustomerSync', @IsPaused = 1;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'while paused';

    -- Resumed as dbo.Resume_Queue_trx leaves the row: IsPaused 0, the last pause kept.
    UPDATE dbo.QueueControl
    SET
        IsPaused = 0,
        ResumedBy = N'bob',
        ResumedAt = '2024-01-02'
    WHERE [Queue] = N'SyncQueue' AND [Type] = 'CustomerSync';
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '1', @Actual = @Seconds, @Message = N'claimed keys once resumed';
END;
GO
-- Limit 3, one item of the type in Processing under a live lease: two slots are free.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims at most the free slots of a type when it has a limit]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @Type = 'CustomerSync', @TypeLimit = 3;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01',
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-9',
        @LeaseUntil = @Later;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:05';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @Type = 'InventorySync';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2,3,11', @Actual = @Seconds, @Message = N'the first claim';

    -- All three slots taken: nothing more of the type, with or without @Type.
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'at the limit';
    EXEC dbo.Next_SyncQueue_utx
        @LockedBy = N'worker-2', @BatchSize = 10, @Type = 'CustomerSync', @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'at the limit, by type';

    -- One finishes: one slot.
    UPDATE dbo.SyncQueue
    SET
        [Status] = 'Completed',
        LeaseUntil = NULL
    WHERE EnqueuedAt = '2024-01-01T00:00:01';
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '4', @Actual = @Seconds, @Message = N'after one finished';
END;
GO
-- Limit 2: item 1 holds a slot under a live lease; item 2's lease ran out, but it holds its
-- slot until it is taken over, which needs no slot: the claim takes item 2 over, not item 3.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx takes over an expired item in its own slot and no new item when the type is at its limit]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @Type = 'CustomerSync', @TypeLimit = 2;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01',
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-9',
        @LeaseUntil = @Later;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02',
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired;
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = '2024-01-01T00:00:02', @StartedAt = '2024-01-01T00:00:02', @AttemptNum = 1,
        @LockedBy = N'worker-dead';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2', @Actual = @Seconds, @Message = N'claimed keys';
END;
GO
-- The claim of a limited type holds an update lock on the type's row of dbo.QueueControl
-- until its transaction ends, so that a concurrent claim of the type waits to count; a
-- claim of unlimited types holds none. NoTransaction: the rows are committed first, so
-- that the only locks on them in the claim's transaction are the claim's own.
--[@tSQLt:NoTransaction]('Next_SyncQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx holds an update lock on the row of a limited type when it claims]
AS
BEGIN
    DECLARE @Unlimited INT;
    DECLARE @Limited INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @Type = 'InventorySync', @TypeLimit = 1;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    BEGIN TRANSACTION;
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @Type = 'CustomerSync';
    SELECT @Unlimited = COUNT(*)
    FROM sys.dm_tran_locks AS l
    INNER JOIN sys.partitions AS p ON l.resource_associated_entity_id = p.hobt_id
    WHERE
        l.request_session_id = @@SPID
        AND l.resource_type = 'KEY'
        AND p.object_id = OBJECT_ID(N'dbo.QueueControl');
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @Type = 'InventorySync';
    SELECT @Limited = COUNT(*)
    FROM sys.dm_tran_locks AS l
    INNER JOIN sys.partitions AS p ON l.resource_associated_entity_id = p.hobt_id
    WHERE
        l.request_session_id = @@SPID
        AND l.resource_type = 'KEY'
        AND l.request_mode IN ('U', 'RangeS-U')
        AND p.object_id = OBJECT_ID(N'dbo.QueueControl');
    ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Unlimited, @Message = N'an unlimited type''s claim';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Limited, @Message = N'the limited type''s claim';
END;
GO
-- Group limit 2: the first two items of a group run at once, the third waits for one.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the first two of a group in order when the group limit is 2]
AS
BEGIN
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.SetControl @GroupLimit = 2;
    -- The later items are the more urgent, which must not matter.
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @GroupKey = N'g';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02', @GroupKey = N'g', @Priority = 5;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03', @GroupKey = N'g', @Priority = 9;
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04', @GroupKey = N'g', @Priority = 9;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2,1', @Actual = @Seconds, @Message = N'the first claim';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'two running';

    UPDATE dbo.SyncQueue
    SET
        [Status] = 'Completed',
        LeaseUntil = NULL
    WHERE EnqueuedAt = '2024-01-01T00:00:01';
    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 10, @Claimed = @Claimed OUTPUT;
    EXEC Next_SyncQueue_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '3', @Actual = @Seconds, @Message = N'after the first finished';
END;
GO
-- The claim fails a dead worker's item on its last attempt: its batch counts it, in the
-- claim's transaction. The batch row faked, the callback spied.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx counts the item in its batch when it fails a batched item whose lease expired on the last attempt]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Failed INT;
    DECLARE @Calls INT;
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    -- The spy marks each call on its batch: a star more in its Name (the batches start unnamed).
    EXEC tSQLt.SpyProcedure
        @ProcedureName = N'dbo.Callback_QueueBatch_utx',
        @CommandToExecute = N'UPDATE dbo.QueueBatch SET [Name] = CONCAT([Name], N''*'') WHERE BatchID = @BatchID;';
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, Completed, SealedAt)
    VALUES (7, 'AnyJobQueue', 'BatchDone', 2, 1, '2024-01-01T00:00:00');
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = @OldToken;
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 3, @LockedBy = N'worker-dead';
    UPDATE dbo.SyncQueue SET BatchID = 7;

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-2', @BatchSize = 5;

    SELECT @Failed = b.Failed FROM dbo.QueueBatch AS b;
    SELECT @Calls = ISNULL(LEN(b.[Name]), 0) FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Failed;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Calls;
END;
GO
-- Limit 1: the dead worker's item on its last attempt held the slot while in Processing; the
-- claim fails it (step 3) after counting, so the Pending item waits for the next claim.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx counts an item whose lease ran out as holding its slot when the type has a limit]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Status VARCHAR(20);
    EXEC Next_SyncQueue_utxTests.FakeQueue;
    EXEC Next_SyncQueue_utxTests.FakeTypes;
    EXEC Next_SyncQueue_utxTests.SetControl @Type = 'CustomerSync', @TypeLimit = 1;
    EXEC Next_SyncQueue_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01',
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired;
    EXEC Next_SyncQueue_utxTests.AddAttempt
        @EnqueuedAt = '2024-01-01T00:00:01', @StartedAt = '2024-01-01T00:00:01', @AttemptNum = 3,
        @LockedBy = N'worker-dead';
    EXEC Next_SyncQueue_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02';

    EXEC dbo.Next_SyncQueue_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'claimed';
    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:02';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the new item';
    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'the dead worker''s item';
END;
GO

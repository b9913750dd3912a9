SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_Notification_utxTests';
GO
-- The queue and its history, and the settings faked empty so that
-- notification.maxAttempts (3) and notification.leaseSeconds (300) have their
-- documented defaults whatever the database holds. A fake has no constraints and no
-- indexes: the tests insert every column the claim reads.
CREATE PROCEDURE Next_Notification_utxTests.FakeQueue
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.Notification', @ConstraintName = N'PK_Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.NotificationAttempt', @ConstraintName = N'PK_NotificationAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Next_Notification_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- One ResetPassword item with every column the claim reads. ScheduledFor and
-- UpdatedAt default to the key; StartedAt is the key once an attempt was made.
CREATE PROCEDURE Next_Notification_utxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @Status VARCHAR(20) = 'Pending',
    @AttemptNum SMALLINT = 0,
    @ScheduledFor DATETIME2(7) = NULL,
    @Priority SMALLINT = 0,
    @GroupKey NVARCHAR(100) = NULL,
    @LockedBy NVARCHAR(128) = NULL,
    @LeaseUntil DATETIME2(7) = NULL,
    @UpdatedAt DATETIME2(7) = NULL,
    @Step VARCHAR(50) = NULL
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
CREATE PROCEDURE Next_Notification_utxTests.AddAttempt
    @EnqueuedAt DATETIME2(7),
    @StartedAt DATETIME2(7),
    @AttemptNum SMALLINT,
    @LockedBy NVARCHAR(128),
    @Outcome VARCHAR(20) = NULL,
    @Step VARCHAR(50) = NULL
AS
BEGIN
    INSERT INTO dbo.NotificationAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@EnqueuedAt, @StartedAt, @AttemptNum, @Step, @LockedBy, @Outcome, NULL, N'', N'');
END;
GO
-- The seconds of the keys in @Claimed, in its order, as a list such as '7,1,3'
-- (every test key is a second of 2024-01-01T00:00); '' when @Claimed is NULL.
CREATE PROCEDURE Next_Notification_utxTests.ClaimedSeconds
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
-- Calls the claim with a bad @BatchSize and asserts that it raised 50007.
CREATE PROCEDURE Next_Notification_utxTests.AssertBatchSizeRefused
    @BatchSize INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    BEGIN TRY
        EXEC dbo.Next_Notification_utx @LockedBy = N'worker-1', @BatchSize = @BatchSize;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@BatchSize%', @Actual = @ErrorMessage, @Message = @Case;
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims the earliest due pending item when several are due]
AS
BEGIN
    DECLARE @ExpectedKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @RowUpdatedAt DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    -- The second and third are due first; of those two the second has the earlier key.
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES
    ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:10:00', '2024-01-01T00:00:01'),
    ('2024-01-01T00:00:02', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:05:00', '2024-01-01T00:00:02'),
    ('2024-01-01T00:00:03', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:05:00', '2024-01-01T00:00:03');

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = @ExpectedKey, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @StartedAt = n.StartedAt,
        @RowUpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:02';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    IF @StartedAt IS NULL OR @StartedAt < CAST(@Before AS DATETIME2(6)) OR @StartedAt > CAST(@After AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'StartedAt must be the time of the claim';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= '2024-01-01T00:00:02'
        EXEC tSQLt.Fail @Message0 = N'the new token must be later than the old one';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @RowUpdatedAt, @Message = N'the row carries the new token';

    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.UpdatedAt
    INTO #ActualOthers
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt <> '2024-01-01T00:00:02';
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.StartedAt,
        a.UpdatedAt
    INTO #ExpectedOthers
    FROM #ActualOthers AS a;
    INSERT INTO #ExpectedOthers (EnqueuedAt, [Status], AttemptNum, StartedAt, UpdatedAt)
    VALUES
    ('2024-01-01T00:00:01', 'Pending', 0, NULL, '2024-01-01T00:00:01'),
    ('2024-01-01T00:00:03', 'Pending', 0, NULL, '2024-01-01T00:00:03');
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedOthers', @Actual = N'#ActualOthers', @Message = N'the other items are untouched';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims an error item when its retry is due]
AS
BEGIN
    DECLARE @ExpectedKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    EXEC Next_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES (
        '2024-01-01T00:00:01',
        'ResetPassword',
        'Error',
        'Send',
        1,
        '2024-01-01T00:01:00',
        '2024-01-01T00:06:00',
        '2024-01-01T00:01:02'
    );

    EXEC dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @ExpectedKey, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum, @Message = N'AttemptNum';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims nothing when the only item is not yet due]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    EXEC Next_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 0, NULL, @Later, '2024-01-01T00:00:01');
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;

    EXEC @RetCode = dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @UpdatedAt, @Message = N'@UpdatedAt';
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims a retried item again only when its ScheduledFor has passed]
AS
BEGIN
    DECLARE @ExpectedKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    EXEC Next_Notification_utxTests.FakeQueue;
    -- An attempt failed and the worker asked for a retry in an hour.
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES (
        '2024-01-01T00:00:01', 'ResetPassword', 'Error', 'Send', 1, '2024-01-01T00:01:00', @Later, '2024-01-01T00:01:02'
    );

    EXEC dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'a retry must wait until it is due';

    UPDATE dbo.Notification
    SET ScheduledFor = DATEADD(MINUTE, -5, SYSUTCDATETIME())
    WHERE EnqueuedAt = '2024-01-01T00:00:01';
    EXEC dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;
    EXEC tSQLt.AssertEquals
        @Expected = @ExpectedKey,
        @Actual = @EnqueuedAt,
        @Message = N'a retry must be claimed once it is due';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx skips items when their attempts reached the default maxAttempts]
AS
BEGIN
    DECLARE @ExpectedKey DATETIME2(7) = '2024-01-01T00:00:03';
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Claimed INT;
    EXEC Next_Notification_utxTests.FakeQueue;
    -- The two earliest have spent the default 3 attempts; the last has one left.
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES
    ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 3, NULL, '2024-01-01T00:01:00', '2024-01-01T00:00:01'),
    (
        '2024-01-01T00:00:02', 'ResetPassword', 'Error', 'Send', 3, '2024-01-01T00:01:00', '2024-01-01T00:02:00',
        '2024-01-01T00:01:02'
    ),
    (
        '2024-01-01T00:00:03', 'ResetPassword', 'Error', 'Send', 2, '2024-01-01T00:01:00', '2024-01-01T00:03:00',
        '2024-01-01T00:01:03'
    );

    EXEC dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @ExpectedKey, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT @Claimed = COUNT(*)
    FROM dbo.Notification AS n
    WHERE n.[Status] = 'Processing';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Claimed, @Message = N'items claimed';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims an item at 3 attempts when notificationmaxAttempts is 5]
AS
BEGIN
    DECLARE @ExpectedKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @AttemptNum INT;
    EXEC Next_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.maxAttempts', 5, NULL);
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES (
        '2024-01-01T00:00:01',
        'ResetPassword',
        'Error',
        'Send',
        3,
        '2024-01-01T00:01:00',
        '2024-01-01T00:06:00',
        '2024-01-01T00:01:02'
    );

    EXEC dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @ExpectedKey, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT @AttemptNum = n.AttemptNum
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @AttemptNum, @Message = N'AttemptNum';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx skips items when they are finished paused or processing]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES
    (
        '2024-01-01T00:00:01', 'ResetPassword', 'Completed', 'Send', 1, '2024-01-01T00:01:00', '2024-01-01T00:00:01',
        '2024-01-01T00:01:01'
    ),
    (
        '2024-01-01T00:00:02', 'ResetPassword', 'Failed', 'Send', 1, '2024-01-01T00:01:00', '2024-01-01T00:00:02',
        '2024-01-01T00:01:02'
    ),
    ('2024-01-01T00:00:03', 'ResetPassword', 'Cancelled', NULL, 0, NULL, '2024-01-01T00:00:03', '2024-01-01T00:01:03'),
    (
        '2024-01-01T00:00:04', 'ResetPassword', 'Terminated', 'Send', 1, '2024-01-01T00:01:00', '2024-01-01T00:00:04',
        '2024-01-01T00:01:04'
    ),
    (
        '2024-01-01T00:00:05', 'ResetPassword', 'PartiallyCompleted', 'Send', 1, '2024-01-01T00:01:00',
        '2024-01-01T00:00:05', '2024-01-01T00:01:05'
    ),
    ('2024-01-01T00:00:06', 'ResetPassword', 'Paused', NULL, 0, NULL, '2024-01-01T00:00:06', '2024-01-01T00:01:06'),
    (
        '2024-01-01T00:00:07', 'ResetPassword', 'Processing', 'Send', 1, '2024-01-01T00:01:00', '2024-01-01T00:00:07',
        '2024-01-01T00:01:07'
    );
    -- The item in Processing is another worker's, and its lease runs for an hour yet.
    UPDATE dbo.Notification
    SET
        LockedBy = N'worker-2',
        LeaseUntil = DATEADD(HOUR, 1, SYSUTCDATETIME())
    WHERE EnqueuedAt = '2024-01-01T00:00:07';
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.UpdatedAt,
        n.LockedBy,
        n.LeaseUntil
    INTO #Before
    FROM dbo.Notification AS n;

    EXEC @RetCode = dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.UpdatedAt,
        n.LockedBy,
        n.LeaseUntil
    INTO #After
    FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx returns NULL outputs and 0 when nothing is due]
AS
BEGIN
    DECLARE @RetCode INT;
    -- Values left over from an earlier claim must not come back.
    DECLARE @EnqueuedAt DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @UpdatedAt DATETIME2(7) = '2024-01-01T00:00:01';
    EXEC Next_Notification_utxTests.FakeQueue;

    EXEC @RetCode = dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @UpdatedAt, @Message = N'@UpdatedAt';
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx raises 50002 when no transaction is open]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50002;

    EXEC dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;
END;
GO
-- .NET's TransactionScope defaults to SERIALIZABLE, where SQL Server refuses READPAST:
-- the procedure runs at READ COMMITTED whatever the caller's level.
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims the earliest due pending item when the caller runs SERIALIZABLE]
AS
BEGIN
    DECLARE @ExpectedKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @RowUpdatedAt DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    -- The second and third are due first; of those two the second has the earlier key.
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES
    ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:10:00', '2024-01-01T00:00:01'),
    ('2024-01-01T00:00:02', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:05:00', '2024-01-01T00:00:02'),
    ('2024-01-01T00:00:03', 'ResetPassword', 'Pending', NULL, 0, NULL, '2024-01-01T00:05:00', '2024-01-01T00:00:03');

    SET @Before = SYSUTCDATETIME();
    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    EXEC @RetCode = dbo.Next_Notification_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = @ExpectedKey, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @StartedAt = n.StartedAt,
        @RowUpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:02';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    IF @StartedAt IS NULL OR @StartedAt < CAST(@Before AS DATETIME2(6)) OR @StartedAt > CAST(@After AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'StartedAt must be the time of the claim';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= '2024-01-01T00:00:02'
        EXEC tSQLt.Fail @Message0 = N'the new token must be later than the old one';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @RowUpdatedAt, @Message = N'the row carries the new token';

    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.UpdatedAt
    INTO #ActualOthers
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt <> '2024-01-01T00:00:02';
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Status],
        a.AttemptNum,
        a.StartedAt,
        a.UpdatedAt
    INTO #ExpectedOthers
    FROM #ActualOthers AS a;
    INSERT INTO #ExpectedOthers (EnqueuedAt, [Status], AttemptNum, StartedAt, UpdatedAt)
    VALUES
    ('2024-01-01T00:00:01', 'Pending', 0, NULL, '2024-01-01T00:00:01'),
    ('2024-01-01T00:00:03', 'Pending', 0, NULL, '2024-01-01T00:00:03');
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedOthers', @Actual = N'#ActualOthers', @Message = N'the other items are untouched';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims by Priority then ScheduledFor then key when several are due]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Order VARCHAR(100) = '';
    DECLARE @Claims INT = 0;
    EXEC Next_Notification_utxTests.FakeQueue;
    -- Expected: 3 and 4 (Priority 5, the earliest ScheduledFor, then the key), 2
    -- (Priority 5, due later), 1 (Priority 0), 5 (Priority -1, though due first).
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = '2024-01-01T00:01:00', @Priority = 0;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02', @ScheduledFor = '2024-01-01T00:09:00', @Priority = 5;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03', @ScheduledFor = '2024-01-01T00:05:00', @Priority = 5;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04', @ScheduledFor = '2024-01-01T00:05:00', @Priority = 5;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05', @ScheduledFor = '2024-01-01T00:00:06', @Priority = -1;

    -- One claim at a time, one more than there are items. A NULL @LockedBy never
    -- hands an item back, so each claim takes the next item.
    WHILE @Claims < 6
        BEGIN
            EXEC dbo.Next_Notification_utx @EnqueuedAt = @EnqueuedAt OUTPUT;
            SET @Order = @Order + ISNULL(CAST(DATEPART(SECOND, @EnqueuedAt) AS VARCHAR(2)), '-') + ',';
            SET @Claims = @Claims + 1;
        END;

    EXEC tSQLt.AssertEqualsString @Expected = '3,4,2,1,5,-,', @Actual = @Order, @Message = N'claim order';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims an item again when its lease expired and attempts are left]
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
    EXEC Next_Notification_utxTests.FakeQueue;
    -- Its worker claimed it at @OldToken and vanished; the lease ran out a minute ago.
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = @OldToken,
        @Step = 'Send';
    EXEC Next_Notification_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-dead', @Step = 'Send';

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Next_Notification_utx
        @LockedBy = N'worker-2',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @LockedBy = n.LockedBy,
        @LeaseUntil = n.LeaseUntil,
        @RowUpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-2', @Actual = @LockedBy, @Message = N'LockedBy';
    EXEC tSQLt.AssertEquals @Expected = @UpdatedAt, @Actual = @RowUpdatedAt, @Message = N'the row carries the new token';
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
    FROM dbo.NotificationAttempt AS a;
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
    (@Key, @OldToken, 1, 'Send', N'worker-dead', 'Error'),
    (@Key, @UpdatedAt, 2, 'Send', N'worker-2', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'attempts';
    SELECT @OldError = a.Error
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @OldToken;
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'abandoned:%worker-2%', @Actual = @OldError, @Message = N'the abandoned attempt''s Error';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx hands its own processing item back when the same worker restarts before the lease ends]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OtherKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @AttemptNum INT;
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @OtherStatus VARCHAR(20);
    DECLARE @OldOutcome VARCHAR(20);
    DECLARE @OldError NVARCHAR(MAX);
    DECLARE @OpenStartedAt DATETIME2(7);
    DECLARE @OpenCount INT;
    EXEC Next_Notification_utxTests.FakeQueue;
    -- worker-1 holds the first item for five more minutes, and restarts. A due item waits too.
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-1',
        @LeaseUntil = @Later,
        @UpdatedAt = @OldToken;
    EXEC Next_Notification_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-1';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @OtherKey;

    EXEC dbo.Next_Notification_utx
        @LockedBy = N'worker-1',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'its own item comes back first';
    SELECT
        @AttemptNum = n.AttemptNum,
        @LockedBy = n.LockedBy
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    SELECT @OtherStatus = n.[Status]
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @OtherKey;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Pending', @Actual = @OtherStatus, @Message = N'a batch of one holds the handed-back item only';
    SELECT
        @OldOutcome = a.Outcome,
        @OldError = a.Error
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.StartedAt = @OldToken;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @OldOutcome, @Message = N'the old attempt''s Outcome';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'abandoned:%restarted%', @Actual = @OldError, @Message = N'the old attempt''s Error';
    SELECT
        @OpenCount = COUNT(*),
        @OpenStartedAt = MAX(a.StartedAt)
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @OpenCount, @Message = N'open attempts';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @OpenStartedAt, @Message = N'the open attempt starts at the new token';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx leaves an item alone when another worker holds an unexpired lease]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:01:00';
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Claimed NVARCHAR(MAX);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-1',
        @LeaseUntil = @Later,
        @UpdatedAt = @OldToken;
    EXEC Next_Notification_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 1, @LockedBy = N'worker-1';
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.LockedBy,
        n.LeaseUntil,
        n.UpdatedAt
    INTO #Before
    FROM dbo.Notification AS n;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome,
        a.Error
    INTO #AttemptsBefore
    FROM dbo.NotificationAttempt AS a;

    EXEC @RetCode = dbo.Next_Notification_utx
        @LockedBy = N'worker-2',
        @BatchSize = 10,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEqualsString @Expected = NULL, @Actual = @Claimed, @Message = N'@Claimed';
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.LockedBy,
        n.LeaseUntil,
        n.UpdatedAt
    INTO #After
    FROM dbo.Notification AS n;
    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome,
        a.Error
    INTO #AttemptsAfter
    FROM dbo.NotificationAttempt AS a;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Before', @Actual = N'#After', @Message = N'items';
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#AttemptsBefore', @Actual = N'#AttemptsAfter', @Message = N'attempts';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx fails an item instead of handing it out when its lease expired on the last attempt]
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
    EXEC Next_Notification_utxTests.FakeQueue;
    -- The default notification.maxAttempts is 3: the vanished worker had the last one.
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 3,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = @OldToken;
    EXEC Next_Notification_utxTests.AddAttempt
        @EnqueuedAt = @Key, @StartedAt = @OldToken, @AttemptNum = 3, @LockedBy = N'worker-dead';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @OtherKey;

    EXEC dbo.Next_Notification_utx
        @LockedBy = N'worker-2',
        @BatchSize = 5,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC Next_Notification_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '2', @Actual = @Seconds, @Message = N'claimed keys';
    EXEC tSQLt.AssertEquals @Expected = @OtherKey, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    SELECT
        @Status = n.[Status],
        @AttemptNum = n.AttemptNum,
        @LeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @AttemptNum, @Message = N'no attempt is added';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'a Failed item holds no lease';

    SELECT
        a.EnqueuedAt,
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome
    INTO #Actual
    FROM dbo.NotificationAttempt AS a;
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
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx skips a later item of a group when an earlier one is unfinished]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    DECLARE @Pending INT;
    EXEC Next_Notification_utxTests.FakeQueue;
    -- Four groups whose first item is unfinished: Pending not yet due, Processing under
    -- another worker's lease, Error waiting for its retry, Paused. Their second items
    -- (11 to 14) are due. Item 21 is alone in its group: the claim takes it.
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Later, @GroupKey = N'g-pending';
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02',
        @Status = 'Processing',
        @AttemptNum = 1,
        @GroupKey = N'g-processing',
        @LockedBy = N'worker-9',
        @LeaseUntil = @Later;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03',
        @Status = 'Error',
        @AttemptNum = 1,
        @ScheduledFor = @Later,
        @GroupKey = N'g-error';
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04', @Status = 'Paused', @GroupKey = N'g-paused';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @GroupKey = N'g-pending';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:12', @GroupKey = N'g-processing';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:13', @GroupKey = N'g-error';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:14', @GroupKey = N'g-paused';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:21', @GroupKey = N'g-alone';

    EXEC dbo.Next_Notification_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_Notification_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '21', @Actual = @Seconds, @Message = N'claimed keys';
    SELECT @Pending = COUNT(*)
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt BETWEEN '2024-01-01T00:00:11' AND '2024-01-01T00:00:14' AND n.[Status] = 'Pending';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Pending, @Message = N'the later items stay Pending';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims the next item of a group when the earlier ones are finished]
AS
BEGIN
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @Seconds VARCHAR(400);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:01', @Status = 'Completed', @AttemptNum = 1, @GroupKey = N'g-completed';
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:02', @Status = 'Failed', @AttemptNum = 3, @GroupKey = N'g-failed';
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:03', @Status = 'Cancelled', @GroupKey = N'g-cancelled';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:11', @GroupKey = N'g-completed';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:12', @GroupKey = N'g-failed';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:13', @GroupKey = N'g-cancelled';

    EXEC dbo.Next_Notification_utx @LockedBy = N'worker-1', @BatchSize = 10, @Claimed = @Claimed OUTPUT;

    EXEC Next_Notification_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = '11,12,13', @Actual = @Seconds, @Message = N'claimed keys';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx claims each item once and one item per group when BatchSize is 5]
AS
BEGIN
    DECLARE @AbandonedKey DATETIME2(7) = '2024-01-01T00:00:07';
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -1, SYSUTCDATETIME());
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
    DECLARE @StillPending VARCHAR(400);
    EXEC Next_Notification_utxTests.FakeQueue;
    -- Groups a (1, 2) and b (3, 4), two items without a group (5, 6), and item 7 whose
    -- worker vanished. Expected: 7 (claimed again, first), then 1, 3, 5, 6; 2 and 4
    -- wait for the earlier items of their groups.
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @GroupKey = N'a';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02', @GroupKey = N'a';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03', @GroupKey = N'b';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04', @GroupKey = N'b';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:05';
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:06';
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @AbandonedKey,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = N'worker-dead',
        @LeaseUntil = @Expired,
        @UpdatedAt = '2024-01-01T00:01:07';
    EXEC Next_Notification_utxTests.AddAttempt
        @EnqueuedAt = @AbandonedKey, @StartedAt = '2024-01-01T00:01:07', @AttemptNum = 1, @LockedBy = N'worker-dead';

    EXEC @RetCode = dbo.Next_Notification_utx
        @LockedBy = N'worker-1',
        @BatchSize = 5,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT,
        @Claimed = @Claimed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Next_Notification_utxTests.ClaimedSeconds @Claimed = @Claimed, @Seconds = @Seconds OUTPUT;
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
    INNER JOIN dbo.Notification AS n ON c.EnqueuedAt = n.EnqueuedAt AND c.UpdatedAt = n.UpdatedAt
    WHERE n.[Status] = 'Processing' AND n.LockedBy = N'worker-1';
    SELECT @Processing = COUNT(*)
    FROM dbo.Notification AS n
    WHERE n.[Status] = 'Processing';
    SELECT @OpenAttempts = COUNT(DISTINCT a.EnqueuedAt)
    FROM dbo.NotificationAttempt AS a
    WHERE a.Outcome IS NULL AND a.LockedBy = N'worker-1';
    SELECT
        @StillPending = STRING_AGG(CAST(DATEPART(SECOND, n.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY n.EnqueuedAt)
    FROM dbo.Notification AS n
    WHERE n.[Status] = 'Pending';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Matching, @Message = N'rows matching @Claimed';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Processing, @Message = N'items in Processing';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @OpenAttempts, @Message = N'items with an open attempt';
    EXEC tSQLt.AssertEqualsString @Expected = '2,4', @Actual = @StillPending, @Message = N'items left Pending';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx writes an attempt row for each claim when it claims]
AS
BEGIN
    DECLARE @PendingKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ErrorKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @EarlierStart DATETIME2(7) = '2024-01-01T00:00:30';
    DECLARE @PendingToken DATETIME2(7);
    DECLARE @ErrorToken DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    -- A new item, and one whose first attempt (by worker-0) ended in an Error at step Send.
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @PendingKey;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @ErrorKey,
        @Status = 'Error',
        @AttemptNum = 1,
        @UpdatedAt = '2024-01-01T00:01:02',
        @Step = 'Send';
    EXEC Next_Notification_utxTests.AddAttempt
        @EnqueuedAt = @ErrorKey,
        @StartedAt = @EarlierStart,
        @AttemptNum = 1,
        @LockedBy = N'worker-0',
        @Outcome = 'Error',
        @Step = 'Send';

    EXEC dbo.Next_Notification_utx @LockedBy = N'worker-1', @BatchSize = 2;

    SELECT @PendingToken = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @PendingKey;
    SELECT @ErrorToken = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @ErrorKey;
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
    FROM dbo.NotificationAttempt AS a;
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
    (@ErrorKey, @EarlierStart, 1, 'Send', N'worker-0', 'Error'),
    (@PendingKey, @PendingToken, 1, NULL, N'worker-1', NULL),
    (@ErrorKey, @ErrorToken, 2, 'Send', N'worker-1', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx sets LeaseUntil to StartedAt plus leaseSeconds when notificationleaseSeconds is 60]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Expected DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.leaseSeconds', 60, NULL);
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @Key;

    SET @Before = SYSUTCDATETIME();
    EXEC dbo.Next_Notification_utx @LockedBy = N'worker-1';
    SET @After = SYSUTCDATETIME();

    SELECT
        @StartedAt = n.StartedAt,
        @LeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    -- StartedAt is whole microseconds, so it may round a fraction below @Before.
    IF @StartedAt IS NULL OR @StartedAt < CAST(@Before AS DATETIME2(6)) OR @StartedAt > CAST(@After AS DATETIME2(6))
        EXEC tSQLt.Fail @Message0 = N'StartedAt must be the time of the claim';
    SET @Expected = DATEADD(SECOND, 60, @StartedAt);
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx sets a lease of 300 seconds when no leaseSeconds setting exists]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Expected DATETIME2(7);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @Key;

    EXEC dbo.Next_Notification_utx @LockedBy = N'worker-1';

    SELECT
        @StartedAt = n.StartedAt,
        @LeaseUntil = n.LeaseUntil
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    IF @StartedAt IS NULL EXEC tSQLt.Fail @Message0 = N'the due item was not claimed';
    SET @Expected = DATEADD(SECOND, 300, @StartedAt);
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx raises 50007 when LockedBy is blank]
AS
BEGIN
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@LockedBy%';

    EXEC dbo.Next_Notification_utx @LockedBy = N'   ';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx raises 50007 when LockedBy is over 128 characters]
AS
BEGIN
    -- The parameter is wider than dbo.WorkerName: a longer name must be refused, not cut.
    DECLARE @LockedBy NVARCHAR(400) = REPLICATE(N'w', 129);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50007, @ExpectedMessagePattern = N'%@LockedBy%';

    EXEC dbo.Next_Notification_utx @LockedBy = @LockedBy;
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx records a LockedBy of 128 characters when it is at the limit]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @LockedBy NVARCHAR(400) = REPLICATE(N'w', 128);
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @RowLockedBy NVARCHAR(400);
    DECLARE @AttemptLockedBy NVARCHAR(400);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @Key;

    EXEC dbo.Next_Notification_utx @LockedBy = @LockedBy, @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @RowLockedBy = n.LockedBy
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    SELECT @AttemptLockedBy = a.LockedBy
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = @LockedBy, @Actual = @RowLockedBy, @Message = N'the item''s LockedBy';
    EXEC tSQLt.AssertEqualsString
        @Expected = @LockedBy, @Actual = @AttemptLockedBy, @Message = N'the attempt''s LockedBy';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx raises 50007 and claims nothing when BatchSize is out of range]
AS
BEGIN
    DECLARE @Status VARCHAR(20);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    EXEC Next_Notification_utxTests.AssertBatchSizeRefused @BatchSize = 0, @Case = N'@BatchSize 0';
    EXEC Next_Notification_utxTests.AssertBatchSizeRefused @BatchSize = -1, @Case = N'@BatchSize -1';
    EXEC Next_Notification_utxTests.AssertBatchSizeRefused @BatchSize = 1001, @Case = N'@BatchSize 1001';
    EXEC Next_Notification_utxTests.AssertBatchSizeRefused @BatchSize = NULL, @Case = N'@BatchSize NULL';

    SELECT @Status = n.[Status]
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
END;
GO
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx records HOST_NAME and SPID as LockedBy when LockedBy is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Expected NVARCHAR(128) = LEFT(ISNULL(HOST_NAME(), N''), 100) + N'/' + CAST(@@SPID AS NVARCHAR(10));
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @RowLockedBy NVARCHAR(128);
    DECLARE @AttemptLockedBy NVARCHAR(128);
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem @EnqueuedAt = @Key;

    EXEC dbo.Next_Notification_utx @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @RowLockedBy = n.LockedBy
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    SELECT @AttemptLockedBy = a.LockedBy
    FROM dbo.NotificationAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt, @Message = N'claimed key';
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @RowLockedBy, @Message = N'the item''s LockedBy';
    EXEC tSQLt.AssertEqualsString
        @Expected = @Expected, @Actual = @AttemptLockedBy, @Message = N'the attempt''s LockedBy';
END;
GO
-- A caller from before leases passes no @LockedBy: its session's items are not handed
-- back to it (a new session would have another @@SPID anyway).
CREATE PROCEDURE Next_Notification_utxTests.[test Next_Notification_utx hands nothing back when LockedBy is NULL]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Holder NVARCHAR(128) = LEFT(ISNULL(HOST_NAME(), N''), 100) + N'/' + CAST(@@SPID AS NVARCHAR(10));
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @AttemptNum INT;
    EXEC Next_Notification_utxTests.FakeQueue;
    EXEC Next_Notification_utxTests.AddItem
        @EnqueuedAt = @Key,
        @Status = 'Processing',
        @AttemptNum = 1,
        @LockedBy = @Holder,
        @LeaseUntil = @Later,
        @UpdatedAt = '2024-01-01T00:01:00';

    EXEC dbo.Next_Notification_utx @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT @AttemptNum = n.AttemptNum
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt, @Message = N'@EnqueuedAt';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_Notification_utxTests';
GO
-- The queue, and the settings faked empty so that notification.maxAttempts
-- has its documented default (3) whatever the database holds.
CREATE PROCEDURE Next_Notification_utxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
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
    IF @StartedAt IS NULL OR @StartedAt < @Before OR @StartedAt > @After
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
    SELECT
        n.EnqueuedAt,
        n.[Status],
        n.AttemptNum,
        n.StartedAt,
        n.UpdatedAt
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
        n.UpdatedAt
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
    IF @StartedAt IS NULL OR @StartedAt < @Before OR @StartedAt > @After
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

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_SyncQueue_utxTests';
GO
-- Keys and old tokens are fixed past times; ScheduledFor is relative to now (due: past, waiting: future).
-- dbo.AppSettings is faked empty wherever the attempt limit matters, so the default of 3 applies.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the earliest due item when several are Pending]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key1 dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Key2 dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @Key3 dbo.[_Timestamp] = '2024-01-01T00:00:03';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @RowUpdatedAt dbo.[_Timestamp];
    DECLARE @StartedAt dbo.[_Timestamp];
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- Key1 is the oldest key but due later; Key2 and Key3 are due at the same time: the key breaks the tie.
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES
    (@Key1, 'CustomerSync', N'C-1', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -5, @Now), @OldToken),
    (@Key2, 'CustomerSync', N'C-2', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -10, @Now), @OldToken),
    (@Key3, 'CustomerSync', N'C-3', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -10, @Now), @OldToken);

    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = @Key2, @Actual = @EnqueuedAt;
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
    (@Key1, 'Pending', 0),
    (@Key2, 'Processing', 1),
    (@Key3, 'Pending', 0);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT
        @RowUpdatedAt = q.UpdatedAt,
        @StartedAt = q.StartedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key2;
    EXEC tSQLt.AssertEquals @Expected = @RowUpdatedAt, @Actual = @UpdatedAt;
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the claim must move the token forward';
    IF @StartedAt IS NULL OR @StartedAt < @Now
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt to the time of the claim';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims an Error item when it is due again]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'InventorySync', N'SKU-1', 'Error', 'Fetch', 1, DATEADD(MINUTE, -20, @Now), DATEADD(MINUTE, -1, @Now),
        @OldToken
    );

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @AttemptNum;
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
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- a retried item waiting for its time, and a new item scheduled for later
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES
    ('2024-01-01T00:00:01', 'CustomerSync', N'C-1', 'Error', NULL, 1, @OldToken, @Later, @OldToken),
    ('2024-01-01T00:00:02', 'CustomerSync', N'C-2', 'Pending', NULL, 0, NULL, @Later, @OldToken);
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q;

    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.ScheduledFor,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx skips an item when its attempts are spent]
AS
BEGIN
    DECLARE @DueFirst dbo.[_Timestamp] = DATEADD(MINUTE, -10, SYSUTCDATETIME());
    DECLARE @DueNext dbo.[_Timestamp] = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @Spent dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Fresh dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- empty: syncqueue.maxAttempts takes its default, 3
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- the spent item is due first, so only the attempt limit keeps it from being claimed
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES
    (@Spent, 'CustomerSync', N'C-1', 'Error', NULL, 3, @OldToken, @DueFirst, @OldToken),
    (@Fresh, 'CustomerSync', N'C-2', 'Pending', NULL, 0, NULL, @DueNext, @OldToken);

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Fresh, @Actual = @EnqueuedAt;
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
    (@Spent, 'Error', 3),
    (@Fresh, 'Processing', 1);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims an item at 3 attempts when maxAttempts is 5]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt) VALUES ('syncqueue.maxAttempts', 5);
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Error', NULL, 3, DATEADD(MINUTE, -20, @Now), DATEADD(MINUTE, -10, @Now),
        '2024-01-01T00:00:05'
    );

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = @Key, @Actual = @EnqueuedAt;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status;
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @AttemptNum;
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx skips items when they are neither Pending nor Error]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Due dbo.[_Timestamp] = DATEADD(MINUTE, -10, SYSUTCDATETIME());
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @Pending dbo.[_Timestamp] = '2024-01-01T00:00:09';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- every other state, all due before the one Pending item, with attempts left
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES
    ('2024-01-01T00:00:01', 'CustomerSync', N'C-1', 'Completed', NULL, 1, @Due, @Due, @OldToken),
    ('2024-01-01T00:00:02', 'CustomerSync', N'C-2', 'Processing', NULL, 1, @Due, @Due, @OldToken),
    ('2024-01-01T00:00:03', 'CustomerSync', N'C-3', 'Failed', NULL, 1, @Due, @Due, @OldToken),
    ('2024-01-01T00:00:04', 'CustomerSync', N'C-4', 'Cancelled', NULL, 1, @Due, @Due, @OldToken),
    ('2024-01-01T00:00:05', 'CustomerSync', N'C-5', 'Paused', NULL, 1, @Due, @Due, @OldToken),
    ('2024-01-01T00:00:06', 'CustomerSync', N'C-6', 'Terminated', NULL, 1, @Due, @Due, @OldToken),
    ('2024-01-01T00:00:07', 'CustomerSync', N'C-7', 'PartiallyCompleted', NULL, 1, @Due, @Due, @OldToken),
    (@Pending, 'CustomerSync', N'C-9', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -1, @Now), @OldToken);
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.UpdatedAt
    INTO #Expected
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt <> @Pending;

    EXEC dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = @Pending, @Actual = @EnqueuedAt;
    SELECT
        q.EnqueuedAt,
        q.[Status],
        q.AttemptNum,
        q.StartedAt,
        q.UpdatedAt
    INTO #Actual
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt <> @Pending;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx returns 0 and NULL outputs when nothing is due]
AS
BEGIN
    -- start from values, to see the procedure reset them
    DECLARE @EnqueuedAt dbo.[_Timestamp] = '2000-01-01';
    DECLARE @UpdatedAt dbo.[_Timestamp] = '2000-01-01';
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;

    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @UpdatedAt;
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
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx raises 50002 when called outside a transaction]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50002;

    EXEC dbo.Next_SyncQueue_utx;
END;
GO
-- .NET's TransactionScope defaults to SERIALIZABLE, where SQL Server refuses READPAST:
-- the procedure runs at READ COMMITTED whatever the caller's level.
CREATE PROCEDURE Next_SyncQueue_utxTests.[test Next_SyncQueue_utx claims the earliest due item when the caller runs SERIALIZABLE]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key1 dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Key2 dbo.[_Timestamp] = '2024-01-01T00:00:02';
    DECLARE @Key3 dbo.[_Timestamp] = '2024-01-01T00:00:03';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @RowUpdatedAt dbo.[_Timestamp];
    DECLARE @StartedAt dbo.[_Timestamp];
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- Key1 is the oldest key but due later; Key2 and Key3 are due at the same time: the key breaks the tie.
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES
    (@Key1, 'CustomerSync', N'C-1', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -5, @Now), @OldToken),
    (@Key2, 'CustomerSync', N'C-2', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -10, @Now), @OldToken),
    (@Key3, 'CustomerSync', N'C-3', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -10, @Now), @OldToken);

    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    EXEC @RetCode = dbo.Next_SyncQueue_utx @EnqueuedAt = @EnqueuedAt OUTPUT, @UpdatedAt = @UpdatedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = @Key2, @Actual = @EnqueuedAt;
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
    (@Key1, 'Pending', 0),
    (@Key2, 'Processing', 1),
    (@Key3, 'Pending', 0);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
    SELECT
        @RowUpdatedAt = q.UpdatedAt,
        @StartedAt = q.StartedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key2;
    EXEC tSQLt.AssertEquals @Expected = @RowUpdatedAt, @Actual = @UpdatedAt;
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the claim must move the token forward';
    IF @StartedAt IS NULL OR @StartedAt < @Now
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt to the time of the claim';
END;
GO

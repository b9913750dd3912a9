SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueHealth_VTests';
GO
-- Known items in each state; the deployed rows of dbo.QueueStatus give every state its row.
CREATE PROCEDURE QueueHealth_VTests.AddItems
AS
BEGIN
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue';
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], ScheduledFor, UpdatedAt, LeaseUntil)
    VALUES
    ('2024-01-01T00:00:01', 'ResetPassword', 'Pending', DATEADD(SECOND, -60, @Now), @Now, NULL),
    ('2024-01-01T00:00:02', 'ResetPassword', 'Pending', DATEADD(SECOND, -10, @Now), @Now, NULL),
    ('2024-01-01T00:00:03', 'ResetPassword', 'Pending', DATEADD(HOUR, 1, @Now), @Now, NULL),
    ('2024-01-01T00:00:04', 'ResetPassword', 'Error', DATEADD(SECOND, -120, @Now), @Now, NULL),
    ('2024-01-01T00:00:05', 'ResetPassword', 'Error', DATEADD(HOUR, 1, @Now), @Now, NULL),
    ('2024-01-01T00:00:06', 'ResetPassword', 'Processing', DATEADD(HOUR, -1, @Now), @Now, DATEADD(SECOND, -5, @Now)),
    ('2024-01-01T00:00:07', 'ResetPassword', 'Processing', DATEADD(HOUR, -1, @Now), @Now, DATEADD(MINUTE, 5, @Now)),
    ('2024-01-01T00:00:08', 'ResetPassword', 'Completed', DATEADD(HOUR, -2, @Now), @Now, NULL);
END;
GO
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V counts the items of each state when a queue has items in several]
AS
BEGIN
    EXEC QueueHealth_VTests.AddItems;

    SELECT
        h.[Status],
        h.Items
    INTO #Actual
    FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] IN ('Pending', 'Error', 'Processing', 'Completed', 'Failed');
    SELECT TOP (0)
        a.[Status],
        a.Items
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Status], Items)
    VALUES ('Pending', 3), ('Error', 2), ('Processing', 2), ('Completed', 1), ('Failed', 0);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- The oldest item that is due, not the oldest item: one scheduled for later raises no alarm.
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V ages only due items when some are scheduled for later]
AS
BEGIN
    DECLARE @Pending BIGINT;
    DECLARE @Error BIGINT;
    DECLARE @Completed BIGINT;
    EXEC QueueHealth_VTests.AddItems;

    SELECT @Pending = h.OldestDueSeconds FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Pending';
    SELECT @Error = h.OldestDueSeconds FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Error';
    SELECT @Completed = h.OldestDueSeconds FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Completed';

    IF @Pending IS NULL OR @Pending NOT BETWEEN 59 AND 62
        EXEC tSQLt.Fail @Message0 = N'Pending: the item due 60 s ago is the oldest due';
    IF @Error IS NULL OR @Error NOT BETWEEN 119 AND 122
        EXEC tSQLt.Fail @Message0 = N'Error: the item due 120 s ago is the oldest due';
    IF @Completed IS NOT NULL EXEC tSQLt.Fail @Message0 = N'a finished item is never due';
END;
GO
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V counts the items past their lease when a worker vanished]
AS
BEGIN
    DECLARE @PastLease INT;
    DECLARE @PendingPastLease INT;
    EXEC QueueHealth_VTests.AddItems;

    SELECT @PastLease = h.PastLease FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Processing';
    SELECT @PendingPastLease = h.PastLease FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Pending';

    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @PastLease, @Message = N'Processing';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @PendingPastLease, @Message = N'Pending';
END;
GO
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V shows every state with no items when a queue is empty]
AS
BEGIN
    DECLARE @States INT;
    DECLARE @Rows INT;
    DECLARE @Items INT;
    EXEC QueueHealth_VTests.AddItems;

    SELECT @States = COUNT(*) FROM dbo.QueueStatus;
    SELECT
        @Rows = COUNT(*),
        @Items = SUM(h.Items)
    FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'SyncQueue' AND h.OldestDueSeconds IS NULL AND h.PastLease = 0;

    EXEC tSQLt.AssertEquals @Expected = @States, @Actual = @Rows, @Message = N'a row per state';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Items, @Message = N'no items';
END;
GO

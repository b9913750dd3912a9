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
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V counts the items of each unfinished state when a queue has items in several]
AS
BEGIN
    EXEC QueueHealth_VTests.AddItems;

    SELECT
        h.[Status],
        h.Items
    INTO #Actual
    FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification';
    SELECT TOP (0)
        a.[Status],
        a.Items
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Status], Items)
    VALUES ('Pending', 3), ('Error', 2), ('Processing', 2), ('Paused', 0);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- Finished items are history: counting them read every item kept until the purge.
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V has no row for a finished state when finished items exist]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC QueueHealth_VTests.AddItems;

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND dbo.QueueIsFinished_fn(h.[Status]) = 1;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'a row of a finished state';
END;
GO
-- The view lists the unfinished states literally (the health index's filter): the same
-- states as dbo.QueueIsFinished_fn, so a state added to one and not the other fails here.
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V shows exactly the states QueueIsFinished_fn calls unfinished when a queue is empty]
AS
BEGIN
    EXEC QueueHealth_VTests.AddItems;

    SELECT h.[Status]
    INTO #Actual
    FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'SyncQueue';
    SELECT s.[Status]
    INTO #Expected
    FROM dbo.QueueStatus AS s
    WHERE dbo.QueueIsFinished_fn(s.[Status]) = 0;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- The oldest item that is due, not the oldest item: one scheduled for later raises no alarm.
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V ages only due items when some are scheduled for later]
AS
BEGIN
    DECLARE @Pending BIGINT;
    DECLARE @Error BIGINT;
    DECLARE @Paused INT;
    EXEC QueueHealth_VTests.AddItems;

    SELECT @Pending = h.OldestDueSeconds FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Pending';
    SELECT @Error = h.OldestDueSeconds FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Error';
    SELECT @Paused = COUNT(*) FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'Notification' AND h.[Status] = 'Paused' AND h.OldestDueSeconds IS NULL;

    IF @Pending IS NULL OR @Pending NOT BETWEEN 59 AND 62
        EXEC tSQLt.Fail @Message0 = N'Pending: the item due 60 s ago is the oldest due';
    IF @Error IS NULL OR @Error NOT BETWEEN 119 AND 122
        EXEC tSQLt.Fail @Message0 = N'Error: the item due 120 s ago is the oldest due';
    IF @Paused <> 1 EXEC tSQLt.Fail @Message0 = N'a Paused item is never due';
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
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V shows every unfinished state with no items when a queue is empty]
AS
BEGIN
    DECLARE @States INT;
    DECLARE @Rows INT;
    DECLARE @Items INT;
    EXEC QueueHealth_VTests.AddItems;

    SELECT @States = COUNT(*)
    FROM dbo.QueueStatus AS s
    WHERE dbo.QueueIsFinished_fn(s.[Status]) = 0;
    SELECT
        @Rows = COUNT(*),
        @Items = SUM(h.Items)
    FROM dbo.QueueHealth_V AS h
    WHERE h.[Queue] = 'SyncQueue' AND h.OldestDueSeconds IS NULL AND h.PastLease = 0;

    EXEC tSQLt.AssertEquals @Expected = @States, @Actual = @Rows, @Message = N'a row per unfinished state';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Items, @Message = N'no items';
END;
GO
-- The view's cost follows the unfinished items only because it reads the filtered health
-- index; a predicate that stopped matching the filter would read the table instead.
CREATE PROCEDURE QueueHealth_VTests.[test QueueHealth_V states the filter of each health index when it reads a queue]
AS
BEGIN
    DECLARE @Definition NVARCHAR(MAX) = OBJECT_DEFINITION(OBJECT_ID(N'dbo.QueueHealth_V'));
    DECLARE @Queues INT;
    DECLARE @Unfiltered NVARCHAR(MAX);
    DECLARE @Unstated NVARCHAR(MAX);

    -- SQL Server keeps a filter as ([Status]='Pending' OR [Status]='Processing' OR ...).
    WITH HealthIndex AS (
        SELECT
            OBJECT_NAME(i.object_id) AS QueueName,
            i.filter_definition AS FilterDefinition
        FROM sys.indexes AS i
        WHERE
            i.name = N'IX_' + OBJECT_NAME(i.object_id) + N'_Status'
            AND OBJECT_SCHEMA_NAME(i.object_id) = N'dbo'
    )

    SELECT
        @Queues = COUNT(*),
        @Unfiltered = STRING_AGG(
            CASE
                WHEN
                    h.FilterDefinition IS NULL
                    OR h.FilterDefinition NOT LIKE N'%''Pending''%'
                    OR h.FilterDefinition NOT LIKE N'%''Processing''%'
                    OR h.FilterDefinition NOT LIKE N'%''Error''%'
                    OR h.FilterDefinition NOT LIKE N'%''Paused''%'
                    OR h.FilterDefinition LIKE N'%''Completed''%'
                    OR h.FilterDefinition LIKE N'%''Failed''%'
                    THEN h.QueueName
            END,
            N', '
        ),
        @Unstated = STRING_AGG(
            CASE
                WHEN
                    @Definition NOT LIKE N'%FROM dbo.' + h.QueueName
                    + N' AS u%WHERE u.\[Status\] IN (''Pending'', ''Processing'', ''Error'', ''Paused'')%'
                    ESCAPE N'\'
                    THEN h.QueueName
            END,
            N', '
        )
    FROM HealthIndex AS h;

    IF @Queues < 2
        EXEC tSQLt.Fail @Message0 = N'no health index of Notification and SyncQueue found';
    IF @Unfiltered IS NOT NULL
        EXEC tSQLt.Fail
            @Message0 = N'not filtered to the unfinished states: IX_<Queue>_Status of ',
            @Message1 = @Unfiltered;
    IF @Unstated IS NOT NULL
        EXEC tSQLt.Fail
            @Message0 = N'QueueHealth_V reads these without the filter as its predicate: ',
            @Message1 = @Unstated;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueItemKey_VTests';
GO
-- Two items in every queue; queue number n's are enqueued n hours into 2024 and 30 minutes later.
CREATE PROCEDURE QueueItemKey_VTests.AddItems
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue';
    INSERT INTO dbo.Notification (EnqueuedAt, [Status], Error)
    VALUES
    (DATEADD(MINUTE, 60, '2024-01-01'), 'Completed', N'ann@example.com'),
    (DATEADD(MINUTE, 90, '2024-01-01'), 'Pending', N'');
    INSERT INTO dbo.SyncQueue (EnqueuedAt, [Status], Error)
    VALUES
    (DATEADD(MINUTE, 120, '2024-01-01'), 'Completed', N'ann@example.com'),
    (DATEADD(MINUTE, 150, '2024-01-01'), 'Pending', N'');
END;
GO
CREATE PROCEDURE QueueItemKey_VTests.[test QueueItemKey_V gives the key of every item when each queue has items]
AS
BEGIN
    EXEC QueueItemKey_VTests.AddItems;

    SELECT
        k.[Queue],
        k.EnqueuedAt
    INTO #Actual
    FROM dbo.QueueItemKey_V AS k;
    SELECT TOP (0)
        a.[Queue],
        a.EnqueuedAt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Queue], EnqueuedAt)
    VALUES
    ('Notification', DATEADD(MINUTE, 60, '2024-01-01')),
    ('Notification', DATEADD(MINUTE, 90, '2024-01-01')),
    ('SyncQueue', DATEADD(MINUTE, 120, '2024-01-01')),
    ('SyncQueue', DATEADD(MINUTE, 150, '2024-01-01'));
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- /metrics reads it by key: each branch must give the table's own EnqueuedAt, so that the
-- predicate filters every queue's items (and seeks its clustered key).
CREATE PROCEDURE QueueItemKey_VTests.[test QueueItemKey_V gives only the items enqueued since a time when read by key]
AS
BEGIN
    DECLARE @Rows INT;
    DECLARE @Queues INT;
    EXEC QueueItemKey_VTests.AddItems;

    SELECT
        @Rows = COUNT(*),
        @Queues = COUNT(DISTINCT k.[Queue])
    FROM dbo.QueueItemKey_V AS k
    WHERE k.EnqueuedAt >= '2024-01-01T01:30:00';

    -- All but the first queue's first item.
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows, @Message = N'items';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Queues, @Message = N'queues';
END;
GO
-- QueueMonitor reads this view: an item's other columns (its payload, its errors) may carry
-- personal data.
CREATE PROCEDURE QueueItemKey_VTests.[test QueueItemKey_V has the queue and key only when its columns are listed]
AS
BEGIN
    SELECT c.name AS ColumnName
    INTO #Actual
    FROM sys.columns AS c
    WHERE c.object_id = OBJECT_ID(N'dbo.QueueItemKey_V');
    SELECT TOP (0) a.ColumnName
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (ColumnName)
    VALUES (N'Queue'), (N'EnqueuedAt');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO

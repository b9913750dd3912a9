SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Worker_SyncQueue_VTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The queue, faked empty.
CREATE PROCEDURE Worker_SyncQueue_VTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue';
END;
GO
-- One item, every column with a value of its own, so that a column mapped wrongly shows up.
CREATE PROCEDURE Worker_SyncQueue_VTests.AddItem
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
        ScheduledFor,
        StartedAt,
        Duration,
        UpdatedAt,
        LockedBy,
        LeaseUntil,
        [Priority],
        GroupKey,
        DedupKey,
        Response,
        Error
    )
    VALUES (
        '2024-01-01T00:00:00',
        'CustomerSync',
        N'C-1001',
        N'{"full":true}',
        'Error',
        'Push',
        2,
        '2024-01-01T00:01:00',
        '2024-01-01T00:02:00',
        1500,
        '2024-01-01T00:02:01',
        N'worker-7',
        '2024-01-01T00:07:00',
        -3,
        N'group:1001',
        N'dedup:1001',
        N'502 Bad Gateway',
        N'upstream unavailable'
    );
END;
GO
-- Every column of the view: one row per item.
CREATE PROCEDURE Worker_SyncQueue_VTests.[test Worker_SyncQueue_V shows every column in one row when an item exists]
AS
BEGIN
    EXEC Worker_SyncQueue_VTests.FakeQueue;
    EXEC Worker_SyncQueue_VTests.AddItem;

    SELECT
        v.EnqueuedAt,
        v.[Type],
        v.EntityKey,
        v.Payload,
        v.[Status],
        v.[Step],
        v.AttemptNum,
        v.ScheduledFor,
        v.StartedAt,
        v.Duration,
        v.UpdatedAt,
        v.LockedBy,
        v.LeaseUntil,
        v.[Priority],
        v.GroupKey,
        v.DedupKey,
        v.Response,
        v.Error
    INTO #Actual
    FROM dbo.Worker_SyncQueue_V AS v;

    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Type],
        a.EntityKey,
        a.Payload,
        a.[Status],
        a.[Step],
        a.AttemptNum,
        a.ScheduledFor,
        a.StartedAt,
        a.Duration,
        a.UpdatedAt,
        a.LockedBy,
        a.LeaseUntil,
        a.[Priority],
        a.GroupKey,
        a.DedupKey,
        a.Response,
        a.Error
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (
        EnqueuedAt,
        [Type],
        EntityKey,
        Payload,
        [Status],
        [Step],
        AttemptNum,
        ScheduledFor,
        StartedAt,
        Duration,
        UpdatedAt,
        LockedBy,
        LeaseUntil,
        [Priority],
        GroupKey,
        DedupKey,
        Response,
        Error
    )
    VALUES (
        '2024-01-01T00:00:00',
        'CustomerSync',
        N'C-1001',
        N'{"full":true}',
        'Error',
        'Push',
        2,
        '2024-01-01T00:01:00',
        '2024-01-01T00:02:00',
        1500,
        '2024-01-01T00:02:01',
        N'worker-7',
        '2024-01-01T00:07:00',
        -3,
        N'group:1001',
        N'dedup:1001',
        N'502 Bad Gateway',
        N'upstream unavailable'
    );

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO

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
-- The dashboard lists the view's items by a business key, of every state, and a finished
-- state's items by when they finished: each list is one seek of an index of dbo.SyncQueue.
-- IndexShape: such an index as the catalog has it, its key columns in order (a descending
-- one marked DESC), its included columns and its filter; @Keys NULL when it does not exist.
CREATE PROCEDURE Worker_SyncQueue_VTests.IndexShape
    @IndexName SYSNAME,
    @Keys NVARCHAR(400) OUTPUT,
    @Included NVARCHAR(400) OUTPUT,
    @Filter NVARCHAR(400) OUTPUT
AS
BEGIN
    SELECT
        @Keys = STRING_AGG(
            c.name + CASE WHEN ic.is_descending_key = 1 THEN N' DESC' ELSE N'' END, N', '
        ) WITHIN GROUP (ORDER BY ic.key_ordinal)
    FROM sys.indexes AS i
    INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
    INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
    WHERE i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND i.name = @IndexName AND ic.key_ordinal > 0;
    SELECT @Included = STRING_AGG(c.name, N', ') WITHIN GROUP (ORDER BY ic.index_column_id)
    FROM sys.indexes AS i
    INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
    INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
    WHERE i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND i.name = @IndexName AND ic.is_included_column = 1;
    SELECT @Filter = i.filter_definition
    FROM sys.indexes AS i
    WHERE i.object_id = OBJECT_ID(N'dbo.SyncQueue') AND i.name = @IndexName;
END;
GO
-- The states a filter names, as SQL Server keeps it (([Status]='Failed' OR [Status]=...)), in
-- the order of their names; and, in the same order, the finished (@Finished = 1) or the
-- unfinished states of dbo.QueueStatus as dbo.QueueIsFinished_fn tells them.
CREATE PROCEDURE Worker_SyncQueue_VTests.StatesOf
    @Filter NVARCHAR(400),
    @Finished BIT,
    @Named NVARCHAR(400) OUTPUT,
    @Expected NVARCHAR(400) OUTPUT
AS
BEGIN
    SELECT @Named = STRING_AGG(s.[Status], N', ') WITHIN GROUP (ORDER BY s.[Status])
    FROM dbo.QueueStatus AS s
    WHERE @Filter LIKE N'%''' + s.[Status] + N'''%';
    SELECT @Expected = STRING_AGG(s.[Status], N', ') WITHIN GROUP (ORDER BY s.[Status])
    FROM dbo.QueueStatus AS s
    WHERE dbo.QueueIsFinished_fn(s.[Status]) = @Finished;
END;
GO
-- An entity's items, whatever their state, in key order.
CREATE PROCEDURE Worker_SyncQueue_VTests.[test Worker_SyncQueue_V is searched by an index keyed EntityKey then EnqueuedAt when the table is deployed]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Included NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    EXEC Worker_SyncQueue_VTests.IndexShape
        @IndexName = N'IX_SyncQueue_SearchEntityKey',
        @Keys = @Keys OUTPUT,
        @Included = @Included OUTPUT,
        @Filter = @Filter OUTPUT;

    EXEC tSQLt.AssertEqualsString @Expected = N'EntityKey, EnqueuedAt', @Actual = @Keys, @Message = N'keys';
    IF @Filter IS NOT NULL
        EXEC tSQLt.Fail @Message0 = N'IX_SyncQueue_SearchEntityKey holds only some items: ', @Message1 = @Filter;
END;
GO
-- The items that have a DedupKey, whatever their state, in key order per DedupKey (the
-- claim's IX_SyncQueue_DedupKey holds the unfinished ones only).
CREATE PROCEDURE Worker_SyncQueue_VTests.[test Worker_SyncQueue_V is searched by an index keyed DedupKey then EnqueuedAt when the table is deployed]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Included NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    EXEC Worker_SyncQueue_VTests.IndexShape
        @IndexName = N'IX_SyncQueue_SearchDedupKey',
        @Keys = @Keys OUTPUT,
        @Included = @Included OUTPUT,
        @Filter = @Filter OUTPUT;

    EXEC tSQLt.AssertEqualsString @Expected = N'DedupKey, EnqueuedAt', @Actual = @Keys, @Message = N'keys';
    -- SQL Server keeps the filter as ([DedupKey] IS NOT NULL): any state.
    IF (@Filter IS NULL OR @Filter NOT LIKE N'%DedupKey%IS NOT NULL%' OR @Filter LIKE N'%Status%')
        EXEC tSQLt.Fail
            @Message0 = N'IX_SyncQueue_SearchDedupKey is not filtered to DedupKey IS NOT NULL alone: ',
            @Message1 = @Filter;
END;
GO
-- The items that have a GroupKey, whatever their state, in key order per GroupKey (the
-- claim's IX_SyncQueue_Group holds the unfinished ones only).
CREATE PROCEDURE Worker_SyncQueue_VTests.[test Worker_SyncQueue_V is searched by an index keyed GroupKey then EnqueuedAt when the table is deployed]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Included NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    EXEC Worker_SyncQueue_VTests.IndexShape
        @IndexName = N'IX_SyncQueue_SearchGroupKey',
        @Keys = @Keys OUTPUT,
        @Included = @Included OUTPUT,
        @Filter = @Filter OUTPUT;

    EXEC tSQLt.AssertEqualsString @Expected = N'GroupKey, EnqueuedAt', @Actual = @Keys, @Message = N'keys';
    -- SQL Server keeps the filter as ([GroupKey] IS NOT NULL): any state.
    IF (@Filter IS NULL OR @Filter NOT LIKE N'%GroupKey%IS NOT NULL%' OR @Filter LIKE N'%Status%')
        EXEC tSQLt.Fail
            @Message0 = N'IX_SyncQueue_SearchGroupKey is not filtered to GroupKey IS NOT NULL alone: ',
            @Message1 = @Filter;
END;
GO
-- The claim's group check and the enqueue's deduplication read the unfinished items only: the
-- search indexes beside them leave their filters as they were.
CREATE PROCEDURE Worker_SyncQueue_VTests.[test Worker_SyncQueue_V leaves the group and DedupKey indexes to unfinished items when search indexes exist]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Included NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    DECLARE @Named NVARCHAR(400);
    DECLARE @Unfinished NVARCHAR(400);
    EXEC Worker_SyncQueue_VTests.IndexShape
        @IndexName = N'IX_SyncQueue_Group',
        @Keys = @Keys OUTPUT,
        @Included = @Included OUTPUT,
        @Filter = @Filter OUTPUT;
    EXEC Worker_SyncQueue_VTests.StatesOf
        @Filter = @Filter, @Finished = 0, @Named = @Named OUTPUT, @Expected = @Unfinished OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = @Unfinished, @Actual = @Named, @Message = N'IX_SyncQueue_Group';

    EXEC Worker_SyncQueue_VTests.IndexShape
        @IndexName = N'IX_SyncQueue_DedupKey',
        @Keys = @Keys OUTPUT,
        @Included = @Included OUTPUT,
        @Filter = @Filter OUTPUT;
    EXEC Worker_SyncQueue_VTests.StatesOf
        @Filter = @Filter, @Finished = 0, @Named = @Named OUTPUT, @Expected = @Unfinished OUTPUT;
    EXEC tSQLt.AssertEqualsString @Expected = @Unfinished, @Actual = @Named, @Message = N'IX_SyncQueue_DedupKey';
END;
GO
-- A finished state's items, the most recently updated first, paged by (UpdatedAt,
-- EnqueuedAt): one seek of that state's items, whatever the other states hold.
CREATE PROCEDURE Worker_SyncQueue_VTests.[test Worker_SyncQueue_V is listed by an index keyed Status then UpdatedAt of finished items when the table is deployed]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Included NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    DECLARE @Named NVARCHAR(400);
    DECLARE @Finished NVARCHAR(400);
    EXEC Worker_SyncQueue_VTests.IndexShape
        @IndexName = N'IX_SyncQueue_FinishedByStatus',
        @Keys = @Keys OUTPUT,
        @Included = @Included OUTPUT,
        @Filter = @Filter OUTPUT;
    EXEC Worker_SyncQueue_VTests.StatesOf
        @Filter = @Filter, @Finished = 1, @Named = @Named OUTPUT, @Expected = @Finished OUTPUT;

    EXEC tSQLt.AssertEqualsString @Expected = N'Status, UpdatedAt, EnqueuedAt', @Actual = @Keys, @Message = N'keys';
    EXEC tSQLt.AssertEqualsString @Expected = N'Type', @Actual = @Included, @Message = N'included';
    EXEC tSQLt.AssertEqualsString @Expected = @Finished, @Actual = @Named, @Message = N'the states of its filter';
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueControl_VTests';
GO
-- Every queue faked empty, and its controls: the queue's group limit 2, its first type
-- paused by ann with a limit of 3; nothing for the queue's other types.
CREATE PROCEDURE QueueControl_VTests.FakeControls
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason, TypeLimit, GroupLimit)
    VALUES
    (N'Notification', '', 0, NULL, NULL, NULL, NULL, 2),
    (N'Notification', 'ResetPassword', 1, N'ann', '2024-01-01', N'quota', 3, NULL),
    (N'SyncQueue', '', 0, NULL, NULL, NULL, NULL, 2),
    (N'SyncQueue', 'CustomerSync', 1, N'ann', '2024-01-01', N'quota', 3, NULL);
END;
GO
CREATE PROCEDURE QueueControl_VTests.[test QueueControl_V shows each queue and type with its pause and limits when some are set]
AS
BEGIN
    EXEC QueueControl_VTests.FakeControls;

    SELECT
        v.[Queue],
        v.[Type],
        v.IsPaused,
        v.ClaimsPaused,
        v.PausedBy,
        v.PauseReason,
        v.TypeLimit,
        v.GroupLimit
    INTO #Actual
    FROM dbo.QueueControl_V AS v
    WHERE v.[Type] IS NULL OR v.[Type] = (
        SELECT MIN(c.[Type]) FROM dbo.QueueControl AS c
        WHERE c.[Queue] = v.[Queue] AND c.[Type] <> ''
    );
    SELECT TOP (0)
        a.[Queue],
        a.[Type],
        a.IsPaused,
        a.ClaimsPaused,
        a.PausedBy,
        a.PauseReason,
        a.TypeLimit,
        a.GroupLimit
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Queue], [Type], IsPaused, ClaimsPaused, PausedBy, PauseReason, TypeLimit, GroupLimit)
    VALUES
    (N'Notification', NULL, 0, 0, NULL, NULL, NULL, 2),
    (N'Notification', 'ResetPassword', 1, 1, N'ann', N'quota', 3, NULL),
    (N'SyncQueue', NULL, 0, 0, NULL, NULL, NULL, 2),
    (N'SyncQueue', 'CustomerSync', 1, 1, N'ann', N'quota', 3, NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE QueueControl_VTests.[test QueueControl_V has a row for every job type when no control is set]
AS
BEGIN
    DECLARE @Rows INT;
    DECLARE @Types INT;
    DECLARE @Running INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl';

    SELECT
        @Rows = COUNT(*),
        @Running = COUNT(CASE WHEN v.ClaimsPaused = 0 AND v.TypeLimit IS NULL THEN 1 END)
    FROM dbo.QueueControl_V AS v
    WHERE v.[Type] IS NOT NULL;
    SELECT @Types = (SELECT COUNT(*) FROM dbo.NotificationType) + (SELECT COUNT(*) FROM dbo.SyncQueueType);
    EXEC tSQLt.AssertEquals @Expected = @Types, @Actual = @Rows, @Message = N'type rows';
    EXEC tSQLt.AssertEquals @Expected = @Types, @Actual = @Running, @Message = N'running, unlimited';
    SELECT @Rows = COUNT(*)
    FROM dbo.QueueControl_V AS v
    WHERE v.[Type] IS NULL AND v.GroupLimit = 1 AND v.IsPaused = 0;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'queue rows';
END;
GO
CREATE PROCEDURE QueueControl_VTests.[test QueueControl_V pauses claims of every type when its queue is paused]
AS
BEGIN
    DECLARE @Paused INT;
    DECLARE @Types INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason)
    VALUES (N'Notification', '', 1, N'ann', '2024-01-01', N'deploy');

    SELECT @Paused = COUNT(*)
    FROM dbo.QueueControl_V AS v
    WHERE v.[Queue] = N'Notification' AND v.[Type] IS NOT NULL AND v.ClaimsPaused = 1 AND v.IsPaused = 0;
    SELECT @Types = COUNT(*)
    FROM dbo.NotificationType;
    EXEC tSQLt.AssertEquals @Expected = @Types, @Actual = @Paused, @Message = N'types whose claims are paused';
END;
GO
CREATE PROCEDURE QueueControl_VTests.[test QueueControl_V counts every Processing item of a type as holding a slot when some leases ran out]
AS
BEGIN
    DECLARE @QueueProcessing INT;
    DECLARE @TypeProcessing INT;
    EXEC QueueControl_VTests.FakeControls;
    INSERT INTO dbo.SyncQueue (EnqueuedAt, [Type], [Status], LeaseUntil)
    VALUES
    ('2024-01-01T00:00:01', 'CustomerSync', 'Processing', DATEADD(MINUTE, 5, SYSUTCDATETIME())),
    ('2024-01-01T00:00:02', 'CustomerSync', 'Processing', DATEADD(MINUTE, 5, SYSUTCDATETIME())),
    ('2024-01-01T00:00:03', 'CustomerSync', 'Processing', DATEADD(MINUTE, -5, SYSUTCDATETIME())),
    ('2024-01-01T00:00:04', 'CustomerSync', 'Pending', NULL);

    SELECT @QueueProcessing = v.Processing
    FROM dbo.QueueControl_V AS v
    WHERE v.[Queue] = N'SyncQueue' AND v.[Type] IS NULL;
    SELECT @TypeProcessing = v.Processing
    FROM dbo.QueueControl_V AS v
    WHERE v.[Queue] = N'SyncQueue' AND v.[Type] = 'CustomerSync';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @QueueProcessing, @Message = N'the queue''s';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @TypeProcessing, @Message = N'the type''s';
END;
GO

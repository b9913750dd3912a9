SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueAttemptOutcome_VTests';
GO
-- In every queue's attempt table: an attempt that ended with a duration, one still
-- running, and one abandoned (ended, no duration), each with texts the view must not show.
-- Queue number n's item is enqueued n seconds into 2024 and its attempts start n hours
-- into 2024-01-02 (and 10 and 20 minutes later).
CREATE PROCEDURE QueueAttemptOutcome_VTests.AddAttempts
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt';
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Duration, Response, Error)
    VALUES
    (DATEADD(SECOND, 1, '2024-01-01'), DATEADD(MINUTE, 60, '2024-01-02'), 1, N'host/1', 'Error', NULL, N'', N'abandoned'),
    (DATEADD(SECOND, 1, '2024-01-01'), DATEADD(MINUTE, 70, '2024-01-02'), 2, N'host/2', 'Completed', 100, N'ann@example.com', N''),
    (DATEADD(SECOND, 1, '2024-01-01'), DATEADD(MINUTE, 80, '2024-01-02'), 3, N'host/3', NULL, NULL, N'', N'');
    INSERT INTO dbo.SyncQueueAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Duration, Response, Error)
    VALUES
    (DATEADD(SECOND, 2, '2024-01-01'), DATEADD(MINUTE, 120, '2024-01-02'), 1, N'host/1', 'Error', NULL, N'', N'abandoned'),
    (DATEADD(SECOND, 2, '2024-01-01'), DATEADD(MINUTE, 130, '2024-01-02'), 2, N'host/2', 'Completed', 200, N'ann@example.com', N''),
    (DATEADD(SECOND, 2, '2024-01-01'), DATEADD(MINUTE, 140, '2024-01-02'), 3, N'host/3', NULL, NULL, N'', N'');
END;
GO
CREATE PROCEDURE QueueAttemptOutcome_VTests.[test QueueAttemptOutcome_V gives the outcome and duration of every attempt when each queue has attempts]
AS
BEGIN
    EXEC QueueAttemptOutcome_VTests.AddAttempts;

    SELECT
        a.[Queue],
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #Actual
    FROM dbo.QueueAttemptOutcome_V AS a;
    SELECT TOP (0)
        a.[Queue],
        a.EnqueuedAt,
        a.StartedAt,
        a.Outcome,
        a.Duration
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Queue], EnqueuedAt, StartedAt, Outcome, Duration)
    VALUES
    ('Notification', DATEADD(SECOND, 1, '2024-01-01'), DATEADD(MINUTE, 60, '2024-01-02'), 'Error', NULL),
    ('Notification', DATEADD(SECOND, 1, '2024-01-01'), DATEADD(MINUTE, 70, '2024-01-02'), 'Completed', 100),
    ('Notification', DATEADD(SECOND, 1, '2024-01-01'), DATEADD(MINUTE, 80, '2024-01-02'), NULL, NULL),
    ('SyncQueue', DATEADD(SECOND, 2, '2024-01-01'), DATEADD(MINUTE, 120, '2024-01-02'), 'Error', NULL),
    ('SyncQueue', DATEADD(SECOND, 2, '2024-01-01'), DATEADD(MINUTE, 130, '2024-01-02'), 'Completed', 200),
    ('SyncQueue', DATEADD(SECOND, 2, '2024-01-01'), DATEADD(MINUTE, 140, '2024-01-02'), NULL, NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- /metrics reads it by StartedAt: each branch must give the table's own StartedAt, so that
-- the predicate filters every queue's attempts (and seeks its IX_<Queue>Attempt_Started).
CREATE PROCEDURE QueueAttemptOutcome_VTests.[test QueueAttemptOutcome_V gives only the attempts started since a time when read by StartedAt]
AS
BEGIN
    DECLARE @Rows INT;
    DECLARE @Queues INT;
    EXEC QueueAttemptOutcome_VTests.AddAttempts;

    SELECT
        @Rows = COUNT(*),
        @Queues = COUNT(DISTINCT a.[Queue])
    FROM dbo.QueueAttemptOutcome_V AS a
    WHERE a.StartedAt >= '2024-01-02T01:10:00';

    -- All but the first queue's first attempt.
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Rows, @Message = N'attempts';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Queues, @Message = N'queues';
END;
GO
-- QueueMonitor reads this view: an attempt's Response and Error may carry personal data
-- (an address, a name), and LockedBy is no figure to count.
CREATE PROCEDURE QueueAttemptOutcome_VTests.[test QueueAttemptOutcome_V has no text or worker column when its columns are listed]
AS
BEGIN
    SELECT c.name AS ColumnName
    INTO #Actual
    FROM sys.columns AS c
    WHERE c.object_id = OBJECT_ID(N'dbo.QueueAttemptOutcome_V');
    SELECT TOP (0) a.ColumnName
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (ColumnName)
    VALUES (N'Queue'), (N'EnqueuedAt'), (N'StartedAt'), (N'Outcome'), (N'Duration');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO

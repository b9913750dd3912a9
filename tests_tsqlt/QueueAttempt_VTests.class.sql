SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueAttempt_VTests';
GO
-- Two attempts of one notification, one of another, and one sync job attempt with the
-- same key: the key alone does not tell the queues apart.
CREATE PROCEDURE QueueAttempt_VTests.AddAttempts
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt';
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Duration, Error)
    VALUES
    ('2024-01-01T00:00:01', '2024-01-01T00:01:00', 1, N'w/1', 'Error', 100, N'timeout'),
    ('2024-01-01T00:00:01', '2024-01-01T00:02:00', 2, N'w/2', NULL, NULL, N''),
    ('2024-01-01T00:00:02', '2024-01-01T00:03:00', 1, N'w/1', 'Completed', 50, N'');
    INSERT INTO dbo.SyncQueueAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Duration)
    VALUES ('2024-01-01T00:00:01', '2024-01-01T00:04:00', 1, N'w/3', 'Failed', 70);
END;
GO
CREATE PROCEDURE QueueAttempt_VTests.[test QueueAttempt_V gives the attempts of an item of its queue only when keys repeat]
AS
BEGIN
    EXEC QueueAttempt_VTests.AddAttempts;
    -- Text columns of a # table take tempdb's collation unless COLLATE DATABASE_DEFAULT gives them
    -- the database's, so that comparing them with the tables' never fails on a collation conflict
    -- (https://learn.microsoft.com/sql/relational-databases/collations/set-or-change-the-column-collation).
    CREATE TABLE #Expected (
        StartedAt DATETIME2(7),
        AttemptNum INT,
        LockedBy NVARCHAR(128) COLLATE DATABASE_DEFAULT,
        Outcome VARCHAR(20) COLLATE DATABASE_DEFAULT,
        Error NVARCHAR(MAX) COLLATE DATABASE_DEFAULT
    );
    INSERT INTO #Expected (StartedAt, AttemptNum, LockedBy, Outcome, Error)
    VALUES
    ('2024-01-01T00:01:00', 1, N'w/1', 'Error', N'timeout'),
    ('2024-01-01T00:02:00', 2, N'w/2', NULL, N'');

    SELECT
        a.StartedAt,
        a.AttemptNum,
        a.LockedBy,
        a.Outcome,
        a.Error
    INTO #Actual
    FROM dbo.QueueAttempt_V AS a
    WHERE a.[Queue] = 'Notification' AND a.EnqueuedAt = '2024-01-01T00:00:01';

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE QueueAttempt_VTests.[test QueueAttempt_V names every queue when each has attempts]
AS
BEGIN
    DECLARE @Queues INT;
    DECLARE @Rows INT;
    EXEC QueueAttempt_VTests.AddAttempts;

    SELECT
        @Queues = COUNT(DISTINCT a.[Queue]),
        @Rows = COUNT(*)
    FROM dbo.QueueAttempt_V AS a;

    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Queues, @Message = N'queues';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Rows, @Message = N'attempts';
END;
GO

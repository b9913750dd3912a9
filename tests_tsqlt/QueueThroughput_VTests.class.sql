SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueThroughput_VTests';
GO
-- Attempts of the last 15 minutes (six did their work, one runs, one was released and one
-- cancelled: those three have no duration that counts) and one from before the window.
CREATE PROCEDURE QueueThroughput_VTests.AddAttempts
AS
BEGIN
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt';
    INSERT INTO dbo.NotificationAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome, Duration)
    VALUES
    ('2024-01-01T00:00:01', DATEADD(MINUTE, -1, @Now), 1, N'w/1', 'Completed', 100),
    ('2024-01-01T00:00:02', DATEADD(MINUTE, -2, @Now), 1, N'w/1', 'Completed', 200),
    ('2024-01-01T00:00:03', DATEADD(MINUTE, -3, @Now), 1, N'w/1', 'Completed', 300),
    ('2024-01-01T00:00:04', DATEADD(MINUTE, -4, @Now), 3, N'w/1', 'Failed', 400),
    ('2024-01-01T00:00:05', DATEADD(MINUTE, -5, @Now), 1, N'w/1', 'Error', 500),
    ('2024-01-01T00:00:06', DATEADD(MINUTE, -6, @Now), 1, N'w/1', 'Error', 600),
    ('2024-01-01T00:00:07', DATEADD(MINUTE, -7, @Now), 1, N'w/1', NULL, NULL),
    ('2024-01-01T00:00:09', DATEADD(MINUTE, -8, @Now), 1, N'w/1', 'Pending', 1),
    ('2024-01-01T00:00:10', DATEADD(MINUTE, -9, @Now), 1, N'w/1', 'Cancelled', 2),
    ('2024-01-01T00:00:08', DATEADD(MINUTE, -30, @Now), 1, N'w/1', 'Completed', 99999);
END;
GO
CREATE PROCEDURE QueueThroughput_VTests.[test QueueThroughput_V gives outcomes per minute of the window when attempts ended in it]
AS
BEGIN
    DECLARE @Completed INT;
    DECLARE @Failed INT;
    DECLARE @Retried INT;
    EXEC QueueThroughput_VTests.AddAttempts;

    -- Per minute over 15 minutes: times 15 gives back the counts.
    SELECT
        @Completed = CAST(ROUND(t.CompletedPerMinute * 15, 0) AS INT),
        @Failed = CAST(ROUND(t.FailedPerMinute * 15, 0) AS INT),
        @Retried = CAST(ROUND(t.RetriedPerMinute * 15, 0) AS INT)
    FROM dbo.QueueThroughput_V AS t
    WHERE t.[Queue] = 'Notification';

    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Completed, @Message = N'Completed (the old one is outside)';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Failed, @Message = N'Failed';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Retried, @Message = N'Error';
END;
GO
CREATE PROCEDURE QueueThroughput_VTests.[test QueueThroughput_V gives the median and 95th percentile duration when attempts ended in the window]
AS
BEGIN
    DECLARE @P50 BIGINT;
    DECLARE @P95 BIGINT;
    EXEC QueueThroughput_VTests.AddAttempts;

    SELECT
        @P50 = t.DurationP50Ms,
        @P95 = t.DurationP95Ms
    FROM dbo.QueueThroughput_V AS t
    WHERE t.[Queue] = 'Notification';

    -- Of 100..600 ms, the durations at or just past the 50th and 95th percentiles; the
    -- released (1 ms) and cancelled (2 ms) attempts would pull both down.
    EXEC tSQLt.AssertEquals @Expected = 300, @Actual = @P50, @Message = N'p50';
    EXEC tSQLt.AssertEquals @Expected = 600, @Actual = @P95, @Message = N'p95';
END;
GO
CREATE PROCEDURE QueueThroughput_VTests.[test QueueThroughput_V gives zeros and no durations when a queue did nothing]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC QueueThroughput_VTests.AddAttempts;

    SELECT @Rows = COUNT(*)
    FROM dbo.QueueThroughput_V AS t
    WHERE
        t.[Queue] = 'SyncQueue'
        AND t.CompletedPerMinute = 0
        AND t.FailedPerMinute = 0
        AND t.RetriedPerMinute = 0
        AND t.DurationP50Ms IS NULL
        AND t.DurationP95Ms IS NULL;

    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO

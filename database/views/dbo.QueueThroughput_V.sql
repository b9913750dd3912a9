SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueThroughput_V: what every relational queue got done over the last 15
   minutes, one row per queue, from the attempts that started in that window
   (dbo.<Queue>Attempt, through its IX_<Queue>Attempt_Started index):
     CompletedPerMinute, FailedPerMinute, RetriedPerMinute  attempts that ended
         Completed, Failed, or in Error (to be retried), per minute;
     DurationP50Ms, DurationP95Ms  the median and 95th percentile of the
         durations of the attempts that did their work (Completed, Failed,
         Error; PERCENTILE_DISC: a duration that occurred; NULL when none did).
         Abandoned, released and cancelled attempts do not count.
   Attempts are counted by when they started, so the rates trail by an attempt's
   length.
   Its cost follows the window, not the history: each of a branch's three reads
   (the counts and the two percentiles) is a range seek on
   IX_<Queue>Attempt_Started from 15 minutes ago on. That index is keyed
   StartedAt and includes Outcome and Duration, so it covers every read and no
   plan needs the clustered index or a lookup: the attempts of finished items
   that a queue keeps until its purge are never read. The window's start,
   DATEADD(MINUTE, -15, SYSUTCDATETIME()), refers to no column, so StartedAt is
   compared bare and the comparison is the seek's start, not a filter on rows
   read. */
CREATE OR ALTER VIEW dbo.QueueThroughput_V
AS
SELECT
    'Notification' AS [Queue],
    COUNT(CASE WHEN a.Outcome = 'Completed' THEN 1 END) / 15.0 AS CompletedPerMinute,
    COUNT(CASE WHEN a.Outcome = 'Failed' THEN 1 END) / 15.0 AS FailedPerMinute,
    COUNT(CASE WHEN a.Outcome = 'Error' THEN 1 END) / 15.0 AS RetriedPerMinute,
    (
        SELECT DISTINCT PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY d.Duration) OVER ()
        FROM dbo.NotificationAttempt AS d
        WHERE
            d.StartedAt >= DATEADD(MINUTE, -15, SYSUTCDATETIME())
            AND d.Outcome IN ('Completed', 'Failed', 'Error')
    ) AS DurationP50Ms,
    (
        SELECT DISTINCT PERCENTILE_DISC(0.95) WITHIN GROUP (ORDER BY d.Duration) OVER ()
        FROM dbo.NotificationAttempt AS d
        WHERE
            d.StartedAt >= DATEADD(MINUTE, -15, SYSUTCDATETIME())
            AND d.Outcome IN ('Completed', 'Failed', 'Error')
    ) AS DurationP95Ms
FROM dbo.NotificationAttempt AS a
WHERE a.StartedAt >= DATEADD(MINUTE, -15, SYSUTCDATETIME())
UNION ALL
SELECT
    'SyncQueue' AS [Queue],
    COUNT(CASE WHEN a.Outcome = 'Completed' THEN 1 END) / 15.0 AS CompletedPerMinute,
    COUNT(CASE WHEN a.Outcome = 'Failed' THEN 1 END) / 15.0 AS FailedPerMinute,
    COUNT(CASE WHEN a.Outcome = 'Error' THEN 1 END) / 15.0 AS RetriedPerMinute,
    (
        SELECT DISTINCT PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY d.Duration) OVER ()
        FROM dbo.SyncQueueAttempt AS d
        WHERE
            d.StartedAt >= DATEADD(MINUTE, -15, SYSUTCDATETIME())
            AND d.Outcome IN ('Completed', 'Failed', 'Error')
    ) AS DurationP50Ms,
    (
        SELECT DISTINCT PERCENTILE_DISC(0.95) WITHIN GROUP (ORDER BY d.Duration) OVER ()
        FROM dbo.SyncQueueAttempt AS d
        WHERE
            d.StartedAt >= DATEADD(MINUTE, -15, SYSUTCDATETIME())
            AND d.Outcome IN ('Completed', 'Failed', 'Error')
    ) AS DurationP95Ms
FROM dbo.SyncQueueAttempt AS a
WHERE a.StartedAt >= DATEADD(MINUTE, -15, SYSUTCDATETIME());
GO

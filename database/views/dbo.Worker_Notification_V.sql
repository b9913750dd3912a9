SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Worker_Notification_V: what a worker sees of a notification, with the
   columns of the tables it joins (NULL where the notification has no row there).
   Next_ and Modify_ return their item through it. */
CREATE OR ALTER VIEW dbo.Worker_Notification_V
AS
SELECT
    n.EnqueuedAt,
    n.[Type],
    n.[Status],
    n.[Step],
    n.AttemptNum,
    n.ScheduledFor,
    n.StartedAt,
    n.Duration,
    n.UpdatedAt,
    n.LockedBy,
    n.LeaseUntil,
    n.[Priority],
    n.GroupKey,
    n.DedupKey,
    n.Response,
    n.Error,
    s1.UserID,
    s1.Username,
    s1.OTP,
    s2.EmailTo,
    s2.PreferredLanguage,
    s2.Response AS EmailResponse,
    s2.Error AS EmailError,
    s3.PhoneNumber,
    s3.Response AS SmsResponse,
    s3.Error AS SmsError
FROM dbo.Notification AS n
LEFT JOIN dbo.Notification_ResetPassword AS s1 ON n.EnqueuedAt = s1.EnqueuedAt
LEFT JOIN dbo.Notification_Email AS s2 ON n.EnqueuedAt = s2.EnqueuedAt
LEFT JOIN dbo.Notification_Sms AS s3 ON n.EnqueuedAt = s3.EnqueuedAt;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Worker_Notification_V: what a worker sees of a notification: its work
   item columns, its ResetPassword details and both channels (NULL where the
   notification has no such subtype or channel). Next_ and Modify_ return their
   item through it. */
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
    rp.UserID,
    rp.Username,
    rp.OTP,
    e.EmailTo,
    e.PreferredLanguage,
    e.Response AS EmailResponse,
    e.Error AS EmailError,
    s.PhoneNumber,
    s.Response AS SmsResponse,
    s.Error AS SmsError
FROM dbo.Notification AS n
LEFT JOIN dbo.Notification_ResetPassword AS rp ON n.EnqueuedAt = rp.EnqueuedAt
LEFT JOIN dbo.Notification_Email AS e ON n.EnqueuedAt = e.EnqueuedAt
LEFT JOIN dbo.Notification_Sms AS s ON n.EnqueuedAt = s.EnqueuedAt;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Notification_ResetPassword: the exclusive subtype of a ResetPassword
   notification: whose password, and the one-time code to send. Its CHECK asks
   dbo.Notification_IsType_fn that the base row is of type ResetPassword; like
   every CHECK that reads another table, it holds when this row is written, so
   the base row's Type never changes once enqueued (no procedure updates it). */
IF OBJECT_ID(N'dbo.Notification_ResetPassword', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.Notification_ResetPassword (
            EnqueuedAt dbo.[_Timestamp],
            OTP dbo.OtpCode,
            UserID dbo.DbUserID,
            Username dbo.DbUsername,
            CONSTRAINT PK_Notification_ResetPassword PRIMARY KEY CLUSTERED (EnqueuedAt),
            CONSTRAINT ResetPassword_Is_Notification FOREIGN KEY (EnqueuedAt)
            REFERENCES dbo.Notification (EnqueuedAt),
            CONSTRAINT ResetPassword_IsType_Notification
            CHECK (dbo.Notification_IsType_fn(EnqueuedAt, 'ResetPassword') = 1)
        );
    END;
GO

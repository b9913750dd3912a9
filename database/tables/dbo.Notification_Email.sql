SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Notification_Email: the e-mail channel of a notification (an inclusive
   subtype: a notification may also have an SMS). Response and Error record this
   channel's own delivery result. */
IF OBJECT_ID(N'dbo.Notification_Email', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.Notification_Email (
            EnqueuedAt dbo.[_Timestamp],
            EmailTo dbo.Email,
            PreferredLanguage dbo.[Name] CONSTRAINT DF_Notification_Email_PreferredLanguage DEFAULT ('en'),
            Response dbo.WebResponse CONSTRAINT DF_Notification_Email_Response DEFAULT (N''),
            Error dbo.WebResponse CONSTRAINT DF_Notification_Email_Error DEFAULT (N''),
            CONSTRAINT PK_Notification_Email PRIMARY KEY CLUSTERED (EnqueuedAt),
            CONSTRAINT Email_Is_Notification FOREIGN KEY (EnqueuedAt)
            REFERENCES dbo.Notification (EnqueuedAt),
            CONSTRAINT Email_HasValid_EmailTo CHECK (dbo.EmailIsValid_fn(EmailTo) = 1)
        );
    END;
GO

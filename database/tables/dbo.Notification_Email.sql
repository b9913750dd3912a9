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
/* The recipient search: the dashboard finds the notifications sent to an
   e-mail address, of every state, newest first, through
   dbo.Worker_Notification_V: a page is one seek, EmailTo equal and EnqueuedAt
   past the last one shown, that stops after its rows, however much history the
   queue keeps. Write cost: one entry of at most about 530 bytes per e-mail,
   written with it by the enqueue and removed by the purge; EmailTo and
   EnqueuedAt never change, so recording the delivery's Response and Error
   writes nothing to it. Databases deployed before get it from V0016. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_Notification_Email_SearchEmailTo' AND object_id = OBJECT_ID(N'dbo.Notification_Email')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_Notification_Email_SearchEmailTo
            ON dbo.Notification_Email (EmailTo, EnqueuedAt);
    END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Notification_Sms: the SMS channel of a notification (an inclusive
   subtype, beside or instead of e-mail), with its own delivery result. */
IF OBJECT_ID(N'dbo.Notification_Sms', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.Notification_Sms (
            EnqueuedAt dbo.[_Timestamp],
            PhoneNumber dbo.PhoneNumber,
            Response dbo.WebResponse CONSTRAINT DF_Notification_Sms_Response DEFAULT (N''),
            Error dbo.WebResponse CONSTRAINT DF_Notification_Sms_Error DEFAULT (N''),
            CONSTRAINT PK_Notification_Sms PRIMARY KEY CLUSTERED (EnqueuedAt),
            CONSTRAINT Sms_Is_Notification FOREIGN KEY (EnqueuedAt)
            REFERENCES dbo.Notification (EnqueuedAt),
            CONSTRAINT Sms_HasValid_PhoneNumber CHECK (dbo.PhoneIsValid_fn(PhoneNumber) = 1)
        );
    END;
GO

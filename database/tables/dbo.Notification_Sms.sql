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
/* The recipient search: the dashboard finds the notifications sent to a phone
   number, of every state, newest first, through dbo.Worker_Notification_V: a
   page is one seek, PhoneNumber equal and EnqueuedAt past the last one shown,
   that stops after its rows, however much history the queue keeps. Write cost:
   one entry of at most about 40 bytes per SMS, written with it by the enqueue
   and removed by the purge; PhoneNumber and EnqueuedAt never change, so
   recording the delivery's Response and Error writes nothing to it. Databases
   deployed before get it from V0017. */
IF
    NOT EXISTS (
        SELECT 1 FROM sys.indexes
        WHERE name = N'IX_Notification_Sms_SearchPhoneNumber' AND object_id = OBJECT_ID(N'dbo.Notification_Sms')
    )
    BEGIN
        CREATE NONCLUSTERED INDEX IX_Notification_Sms_SearchPhoneNumber
            ON dbo.Notification_Sms (PhoneNumber, EnqueuedAt);
    END;
GO

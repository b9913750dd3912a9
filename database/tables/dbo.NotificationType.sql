SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.NotificationType: the kinds of notification; each has its subtype table
   (ResetPassword: dbo.Notification_ResetPassword). */
IF OBJECT_ID(N'dbo.NotificationType', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.NotificationType (
            [Type] dbo.[_Type],
            CONSTRAINT PK_NotificationType PRIMARY KEY CLUSTERED ([Type])
        );
    END;
GO

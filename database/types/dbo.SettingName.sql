SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SettingName: The name of a setting in dbo.AppSettings: <queue>.<setting>, e.g. notification.maxAttempts.
   Alias types never change in place: a new meaning is a new type and a migration. */
IF TYPE_ID(N'dbo.SettingName') IS NULL
    BEGIN
        CREATE TYPE dbo.SettingName FROM VARCHAR(100) NOT NULL;
    END;
GO

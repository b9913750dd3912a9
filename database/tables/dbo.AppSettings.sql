SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.AppSettings: per-queue settings, one typed value per row. A missing row
   means the documented default of dbo.AppSettingInt_fn. */
IF OBJECT_ID(N'dbo.AppSettings', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.AppSettings (
            Param dbo.SettingName,
            ValInt INT NULL,
            ValText NVARCHAR(400) NULL,
            CONSTRAINT PK_AppSettings PRIMARY KEY CLUSTERED (Param)
        );
    END;
GO

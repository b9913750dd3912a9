SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.AppSettingInt_fn: a whole-number setting: the row of dbo.AppSettings, or the
   documented default when the row is absent (or NULL, or the name unknown).
   @Param: the setting's name.
   Settings and their defaults:
     notification.maxAttempts  3  claims a notification may take
     syncqueue.maxAttempts     3  claims a sync job may take */
CREATE OR ALTER FUNCTION dbo.AppSettingInt_fn(@Param dbo.SettingName)
RETURNS INT
AS
BEGIN
    RETURN COALESCE(
        (
            SELECT s.ValInt FROM dbo.AppSettings AS s
            WHERE s.Param = @Param
        ),
        (
            SELECT d.ValInt
            FROM (
                VALUES
                ('notification.maxAttempts', 3),
                ('syncqueue.maxAttempts', 3)
            ) AS d(Param, ValInt)
            WHERE d.Param = @Param
        )
    );
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'AppSettingInt_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns the documented defaults when no row exists]
AS
BEGIN
    DECLARE @Notification INT;
    DECLARE @SyncQueue INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Notification = dbo.AppSettingInt_fn('notification.maxAttempts');
    SET @SyncQueue = dbo.AppSettingInt_fn('syncqueue.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Notification, @Message = N'notification.maxAttempts';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @SyncQueue, @Message = N'syncqueue.maxAttempts';
END;
GO
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns the row ValInt when a row exists]
AS
BEGIN
    DECLARE @Actual INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt)
    VALUES ('notification.maxAttempts', 7);

    SET @Actual = dbo.AppSettingInt_fn('notification.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = 7, @Actual = @Actual;
END;
GO
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns the default when the row ValInt is NULL]
AS
BEGIN
    DECLARE @Actual INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText)
    VALUES ('syncqueue.maxAttempts', NULL, N'five');

    SET @Actual = dbo.AppSettingInt_fn('syncqueue.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Actual;
END;
GO
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns NULL when the name is unknown]
AS
BEGIN
    DECLARE @Actual INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Actual = dbo.AppSettingInt_fn('nosuchqueue.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Actual;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Notification_IsType_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The fake has no foreign key to dbo.NotificationType, so any type will do.
CREATE PROCEDURE Notification_IsType_fnTests.ArrangeItems
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    INSERT INTO dbo.Notification (EnqueuedAt, [Type])
    VALUES
    ('2024-01-01T00:00:00', 'ResetPassword'),
    ('2024-01-02T00:00:00', 'SomeOtherType');
END;
GO
CREATE PROCEDURE Notification_IsType_fnTests.[test Notification_IsType_fn returns 1 when key and type match]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Actual BIT;
    EXEC Notification_IsType_fnTests.ArrangeItems;

    SET @Actual = dbo.Notification_IsType_fn(@EnqueuedAt, 'ResetPassword');

    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Actual;
END;
GO
CREATE PROCEDURE Notification_IsType_fnTests.[test Notification_IsType_fn returns 0 when the type differs]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7) = '2024-01-02T00:00:00';
    DECLARE @Actual BIT;
    EXEC Notification_IsType_fnTests.ArrangeItems;

    SET @Actual = dbo.Notification_IsType_fn(@EnqueuedAt, 'ResetPassword');

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO
CREATE PROCEDURE Notification_IsType_fnTests.[test Notification_IsType_fn returns 0 when the key is unknown]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7) = '2024-01-03T00:00:00';
    DECLARE @Actual BIT;
    EXEC Notification_IsType_fnTests.ArrangeItems;

    SET @Actual = dbo.Notification_IsType_fn(@EnqueuedAt, 'ResetPassword');

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Notification_ResetPasswordTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The CHECK asks dbo.Notification_IsType_fn, which reads dbo.Notification: fake it with one base row of
-- each type (the fake has no foreign key to dbo.NotificationType, so 'Welcome' needs no row there).
CREATE PROCEDURE Notification_ResetPasswordTests.ArrangeConstraint
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    INSERT INTO dbo.Notification (EnqueuedAt, [Type])
    VALUES
    ('2024-01-01T00:00:00', 'ResetPassword'),
    ('2024-01-02T00:00:00', 'Welcome');
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.Notification_ResetPassword',
        @ConstraintName = N'ResetPassword_IsType_Notification';
END;
GO
CREATE PROCEDURE Notification_ResetPasswordTests.[test Notification_ResetPassword rejects a row when its base differs]
AS
BEGIN
    EXEC Notification_ResetPasswordTests.ArrangeConstraint;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.Notification_ResetPassword (EnqueuedAt, OTP, UserID, Username)
    VALUES ('2024-01-02T00:00:00', '123456', 42, N'alice');
END;
GO
CREATE PROCEDURE Notification_ResetPasswordTests.[test Notification_ResetPassword accepts a row when its base matches]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC Notification_ResetPasswordTests.ArrangeConstraint;

    INSERT INTO dbo.Notification_ResetPassword (EnqueuedAt, OTP, UserID, Username)
    VALUES ('2024-01-01T00:00:00', '123456', 42, N'alice');

    SELECT @Rows = COUNT(*) FROM dbo.Notification_ResetPassword;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO

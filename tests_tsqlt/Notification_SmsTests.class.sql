SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Notification_SmsTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE Notification_SmsTests.ArrangeConstraint
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.Notification_Sms',
        @ConstraintName = N'Sms_HasValid_PhoneNumber';
END;
GO
CREATE PROCEDURE Notification_SmsTests.[test Notification_Sms rejects a number when it is not E164]
AS
BEGIN
    EXEC Notification_SmsTests.ArrangeConstraint;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
    VALUES ('2024-01-01T00:00:00', 'not-a-number');
END;
GO
CREATE PROCEDURE Notification_SmsTests.[test Notification_Sms accepts a number when it is E164]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC Notification_SmsTests.ArrangeConstraint;

    INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
    VALUES ('2024-01-01T00:00:00', '+14155550123');

    SELECT @Rows = COUNT(*) FROM dbo.Notification_Sms;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO

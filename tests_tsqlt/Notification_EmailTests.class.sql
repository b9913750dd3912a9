SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Notification_EmailTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE Notification_EmailTests.ArrangeConstraint
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.Notification_Email',
        @ConstraintName = N'Email_HasValid_EmailTo';
END;
GO
CREATE PROCEDURE Notification_EmailTests.[test Notification_Email rejects an address when it is not one]
AS
BEGIN
    EXEC Notification_EmailTests.ArrangeConstraint;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 547;

    INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo)
    VALUES ('2024-01-01T00:00:00', N'not-an-address');
END;
GO
CREATE PROCEDURE Notification_EmailTests.[test Notification_Email accepts an address when it is valid]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC Notification_EmailTests.ArrangeConstraint;

    INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo)
    VALUES ('2024-01-01T00:00:00', N'alice@example.org');

    SELECT @Rows = COUNT(*) FROM dbo.Notification_Email;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO

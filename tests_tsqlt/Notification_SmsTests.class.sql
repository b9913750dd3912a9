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
-- The dashboard finds the notifications sent to a phone number, of every state, newest first:
-- one seek of this index a page.
CREATE PROCEDURE Notification_SmsTests.[test Notification_Sms has an index keyed PhoneNumber then EnqueuedAt of every row when it is deployed]
AS
BEGIN
    DECLARE @Keys NVARCHAR(400);
    DECLARE @Filter NVARCHAR(400);
    DECLARE @Indexes INT;
    SELECT
        @Keys = STRING_AGG(
            c.name + CASE WHEN ic.is_descending_key = 1 THEN N' DESC' ELSE N'' END, N', '
        ) WITHIN GROUP (ORDER BY ic.key_ordinal)
    FROM sys.indexes AS i
    INNER JOIN sys.index_columns AS ic ON i.object_id = ic.object_id AND i.index_id = ic.index_id
    INNER JOIN sys.columns AS c ON ic.object_id = c.object_id AND ic.column_id = c.column_id
    WHERE
        i.object_id = OBJECT_ID(N'dbo.Notification_Sms') AND i.name = N'IX_Notification_Sms_SearchPhoneNumber'
        AND ic.key_ordinal > 0;
    SELECT
        @Indexes = COUNT(*),
        @Filter = MAX(i.filter_definition)
    FROM sys.indexes AS i
    WHERE i.object_id = OBJECT_ID(N'dbo.Notification_Sms') AND i.name = N'IX_Notification_Sms_SearchPhoneNumber';

    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Indexes, @Message = N'IX_Notification_Sms_SearchPhoneNumber';
    EXEC tSQLt.AssertEqualsString @Expected = N'PhoneNumber, EnqueuedAt', @Actual = @Keys, @Message = N'keys';
    IF @Filter IS NOT NULL
        EXEC tSQLt.Fail @Message0 = N'IX_Notification_Sms_SearchPhoneNumber holds only some rows: ', @Message1 = @Filter;
END;
GO

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
-- The dashboard finds the notifications sent to a e-mail address, of every state, newest first:
-- one seek of this index a page.
CREATE PROCEDURE Notification_EmailTests.[test Notification_Email has an index keyed EmailTo then EnqueuedAt of every row when it is deployed]
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
        i.object_id = OBJECT_ID(N'dbo.Notification_Email') AND i.name = N'IX_Notification_Email_SearchEmailTo'
        AND ic.key_ordinal > 0;
    SELECT
        @Indexes = COUNT(*),
        @Filter = MAX(i.filter_definition)
    FROM sys.indexes AS i
    WHERE i.object_id = OBJECT_ID(N'dbo.Notification_Email') AND i.name = N'IX_Notification_Email_SearchEmailTo';

    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Indexes, @Message = N'IX_Notification_Email_SearchEmailTo';
    EXEC tSQLt.AssertEqualsString @Expected = N'EmailTo, EnqueuedAt', @Actual = @Keys, @Message = N'keys';
    IF @Filter IS NOT NULL
        EXEC tSQLt.Fail @Message0 = N'IX_Notification_Email_SearchEmailTo holds only some rows: ', @Message1 = @Filter;
END;
GO

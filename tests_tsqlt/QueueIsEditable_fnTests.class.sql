SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueIsEditable_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- Seed 000: a worker may write to every state but Cancelled, Paused, Terminated, Completed and PartiallyCompleted.
-- The states come from the deployed rows of dbo.QueueStatus, so a new state fails here until it is classified.
CREATE PROCEDURE QueueIsEditable_fnTests.[test QueueIsEditable_fn classifies as seed 000 when given each state]
AS
BEGIN
    SELECT
        s.[Status],
        dbo.QueueIsEditable_fn(s.[Status]) AS IsEditable
    INTO #Actual
    FROM dbo.QueueStatus AS s;

    SELECT TOP (0)
        a.[Status],
        a.IsEditable
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Status], IsEditable)
    VALUES
    ('Pending', 1),
    ('Processing', 1),
    ('Error', 1),
    ('Failed', 1),
    ('Completed', 0),
    ('Cancelled', 0),
    ('Paused', 0),
    ('Terminated', 0),
    ('PartiallyCompleted', 0);

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- NULL NOT IN (...) is unknown, so the IF is not taken and the function falls through to RETURN 0.
CREATE PROCEDURE QueueIsEditable_fnTests.[test QueueIsEditable_fn returns 0 when the state is NULL]
AS
BEGIN
    DECLARE @Actual BIT = dbo.QueueIsEditable_fn(NULL);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE QueueIsEditable_fnTests.[test QueueIsEditable_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.QueueIsEditable_fn', N'FN');
    DECLARE @Actual NVARCHAR(100) = CONCAT(
        N'IsSchemaBound=', CAST(OBJECTPROPERTYEX(@Id, 'IsSchemaBound') AS INT),
        N' UserDataAccess=', CAST(OBJECTPROPERTYEX(@Id, 'UserDataAccess') AS INT),
        N' SystemDataAccess=', CAST(OBJECTPROPERTYEX(@Id, 'SystemDataAccess') AS INT)
    );

    EXEC tSQLt.AssertEqualsString
        @Expected = N'IsSchemaBound=1 UserDataAccess=0 SystemDataAccess=0',
        @Actual = @Actual;
END;
GO

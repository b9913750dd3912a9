SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueIsFinished_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- Seed 000: every state but Pending, Processing, Error and Paused is terminal.
-- The states come from the deployed rows of dbo.QueueStatus, so a new state fails here until it is classified.
CREATE PROCEDURE QueueIsFinished_fnTests.[test QueueIsFinished_fn classifies as seed 000 when given each state]
AS
BEGIN
    SELECT
        s.[Status],
        dbo.QueueIsFinished_fn(s.[Status]) AS IsFinished
    INTO #Actual
    FROM dbo.QueueStatus AS s;

    SELECT TOP (0)
        a.[Status],
        a.IsFinished
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Status], IsFinished)
    VALUES
    ('Pending', 0),
    ('Processing', 0),
    ('Error', 0),
    ('Failed', 1),
    ('Completed', 1),
    ('Cancelled', 1),
    ('Paused', 0),
    ('Terminated', 1),
    ('PartiallyCompleted', 1);

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- NULL NOT IN (...) is unknown, so the IF is not taken and the function falls through to RETURN 0.
CREATE PROCEDURE QueueIsFinished_fnTests.[test QueueIsFinished_fn returns 0 when the state is NULL]
AS
BEGIN
    DECLARE @Actual BIT = dbo.QueueIsFinished_fn(NULL);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE QueueIsFinished_fnTests.[test QueueIsFinished_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.QueueIsFinished_fn', N'FN');
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

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueIsProcessable_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- Seed 000: Pending, Paused and Error can be picked up; every other state cannot.
-- The states come from the deployed rows of dbo.QueueStatus, so a new state fails here until it is classified.
CREATE PROCEDURE QueueIsProcessable_fnTests.[test QueueIsProcessable_fn classifies as seed 000 when given each state]
AS
BEGIN
    SELECT
        s.[Status],
        dbo.QueueIsProcessable_fn(s.[Status]) AS IsProcessable
    INTO #Actual
    FROM dbo.QueueStatus AS s;

    SELECT TOP (0)
        a.[Status],
        a.IsProcessable
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected ([Status], IsProcessable)
    VALUES
    ('Pending', 1),
    ('Processing', 0),
    ('Error', 1),
    ('Failed', 0),
    ('Completed', 0),
    ('Cancelled', 0),
    ('Paused', 1),
    ('Terminated', 0),
    ('PartiallyCompleted', 0);

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- NULL IN (...) is unknown, so the IF is not taken and the function falls through to RETURN 0.
CREATE PROCEDURE QueueIsProcessable_fnTests.[test QueueIsProcessable_fn returns 0 when the state is NULL]
AS
BEGIN
    DECLARE @Actual BIT = dbo.QueueIsProcessable_fn(NULL);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE QueueIsProcessable_fnTests.[test QueueIsProcessable_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.QueueIsProcessable_fn', N'FN');
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

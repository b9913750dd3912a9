SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueNextKey_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- "Now" is checked to within a second: never a timed assertion tighter than the clock.
CREATE PROCEDURE QueueNextKey_fnTests.[test QueueNextKey_fn returns now when nothing was handed out]
AS
BEGIN
    DECLARE @Actual DATETIME2(7) = dbo.QueueNextKey_fn(NULL);
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();

    IF @Actual IS NULL OR ABS(DATEDIFF(MILLISECOND, @Actual, @Now)) > 1000
        BEGIN
            EXEC tSQLt.Fail
                @Message0 = N'expected a time within a second of SYSUTCDATETIME(), got ',
                @Message1 = @Actual;
        END;
END;
GO
CREATE PROCEDURE QueueNextKey_fnTests.[test QueueNextKey_fn returns now when the last key is in the past]
AS
BEGIN
    DECLARE @Past DATETIME2(7) = DATEADD(HOUR, -1, SYSUTCDATETIME());
    DECLARE @Actual DATETIME2(7) = dbo.QueueNextKey_fn(@Past);
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();

    IF @Actual IS NULL OR ABS(DATEDIFF(MILLISECOND, @Actual, @Now)) > 1000
        BEGIN
            EXEC tSQLt.Fail
                @Message0 = N'expected a time within a second of SYSUTCDATETIME(), got ',
                @Message1 = @Actual;
        END;
END;
GO
-- A clock that stepped back: the key still moves forward, by a microsecond (keys are whole microseconds
-- so that Python's datetime carries them exactly; the header of dbo.QueueNextKey_fn says why).
CREATE PROCEDURE QueueNextKey_fnTests.[test QueueNextKey_fn returns the key plus 1 us when the key is in the future]
AS
BEGIN
    DECLARE @Future DATETIME2(6) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Expected DATETIME2(7) = DATEADD(MICROSECOND, 1, @Future);
    DECLARE @Actual DATETIME2(7) = dbo.QueueNextKey_fn(@Future);

    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @Actual;
END;
GO
-- A key with a 100 ns fraction (written by hand, or before keys were whole microseconds) is followed by
-- the first whole microsecond after it. (.1234561 plus 1 us is .1234571: rounding and truncating to
-- microseconds agree on .123457, so the expectation does not depend on which one SQL Server does.)
CREATE PROCEDURE QueueNextKey_fnTests.[test QueueNextKey_fn returns a whole microsecond when the key has 100 ns]
AS
BEGIN
    DECLARE @After DATETIME2(7) = '2999-01-01T00:00:00.1234561';
    DECLARE @Expected DATETIME2(7) = '2999-01-01T00:00:00.1234570';
    DECLARE @Actual DATETIME2(7) = dbo.QueueNextKey_fn(@After);

    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @Actual;
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE QueueNextKey_fnTests.[test QueueNextKey_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.QueueNextKey_fn', N'FN');
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

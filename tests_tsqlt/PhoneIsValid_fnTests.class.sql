SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'PhoneIsValid_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The numbers are at most 16 characters, the length of dbo.PhoneNumber: see the next test for longer ones.
CREATE PROCEDURE PhoneIsValid_fnTests.[test PhoneIsValid_fn accepts or rejects each number when given a table of them]
AS
BEGIN
    SELECT
        CAST(v.PhoneNumber AS VARCHAR(16)) AS PhoneNumber,
        CAST(v.IsValid AS BIT) AS IsValid
    INTO #Expected
    FROM (
        VALUES
        ('+14155550123', 1),
        ('+442071838750', 1),
        (NULL, 0),
        ('14155550123', 0),
        ('+0123456789', 0),
        ('+1234567', 0),
        ('+1415555O123', 0),
        ('+4420718387 ', 0)
    ) AS v(PhoneNumber, IsValid);

    SELECT
        e.PhoneNumber,
        dbo.PhoneIsValid_fn(e.PhoneNumber) AS IsValid
    INTO #Actual
    FROM #Expected AS e;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- E.164 allows at most 15 digits. This fails while the parameter is dbo.PhoneNumber (VARCHAR(16)):
-- SQL Server truncates the argument silently to '+123456789012345', which is valid.
CREATE PROCEDURE PhoneIsValid_fnTests.[test PhoneIsValid_fn returns 0 when the number has 16 digits]
AS
BEGIN
    DECLARE @PhoneNumber VARCHAR(20) = '+1234567890123456';
    DECLARE @Actual BIT = dbo.PhoneIsValid_fn(@PhoneNumber);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE PhoneIsValid_fnTests.[test PhoneIsValid_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.PhoneIsValid_fn', N'FN');
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

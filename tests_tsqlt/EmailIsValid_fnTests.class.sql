SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'EmailIsValid_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE EmailIsValid_fnTests.[test EmailIsValid_fn accepts or rejects each address when given a table of them]
AS
BEGIN
    SELECT
        CAST(v.Email AS NVARCHAR(254)) AS Email,
        CAST(v.IsValid AS BIT) AS IsValid
    INTO #Expected
    FROM (
        VALUES
        (N'a@b.co', 1),
        (N'first.last+tag@sub.example.org', 1),
        (NULL, 0),
        (N'no-at-sign.example.org', 0),
        (N'a@b@c.de', 0),
        (N'a b@c.de', 0),
        (N'a@b.co.', 0),
        (N'.a@b.co', 0),
        (N'a@.b.co', 0),
        (N'a..b@c.de', 0),
        (N'a@b', 0),
        (N'a;b@c.de', 0),
        (N'a@b.c' + NCHAR(13) + NCHAR(10) + N'o', 0),
        (N'a' + NCHAR(9) + N'b@c.de', 0)
    ) AS v(Email, IsValid);

    SELECT
        e.Email,
        dbo.EmailIsValid_fn(e.Email) AS IsValid
    INTO #Actual
    FROM #Expected AS e;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE EmailIsValid_fnTests.[test EmailIsValid_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.EmailIsValid_fn', N'FN');
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

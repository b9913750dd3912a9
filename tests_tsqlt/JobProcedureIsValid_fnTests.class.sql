SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'JobProcedureIsValid_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- Each case is named, as tSQLt compares rows with the collation's equality, under which
-- 'dbo.SyncCustomer_utx' and 'DBO.SyncCustomer_utx ' may be the same name.
CREATE PROCEDURE JobProcedureIsValid_fnTests.[test JobProcedureIsValid_fn accepts or rejects each name when given a table of them]
AS
BEGIN
    SELECT
        CAST(v.[Case] AS VARCHAR(60)) AS [Case],
        CAST(v.JobProcedure AS NVARCHAR(400)) AS JobProcedure,
        CAST(v.IsValid AS BIT) AS IsValid
    INTO #Expected
    FROM (
        VALUES
        ('dbo and a name', N'dbo.SyncCustomer_utx', 1),
        ('a name that starts with _', N'dbo._Sync', 1),
        ('a name of one letter', N'dbo.a', 1),
        ('digits after the first character', N'dbo.Sync2', 1),
        ('sp without its underscore', N'dbo.spSync', 1),
        ('a name of 128 characters', N'dbo.' + REPLICATE(N'j', 128), 1),
        ('NULL', NULL, 0),
        ('empty', N'', 0),
        ('dbo and no name', N'dbo.', 0),
        ('one part', N'SyncCustomer_utx', 0),
        ('another schema', N'Sales.SyncCustomer_utx', 0),
        ('the sys schema', N'sys.sp_executesql', 0),
        ('DBO in capitals', N'DBO.SyncCustomer_utx', 0),
        ('Dbo', N'Dbo.SyncCustomer_utx', 0),
        ('brackets', N'[dbo].[SyncCustomer_utx]', 0),
        ('a bracketed name', N'dbo.[SyncCustomer_utx]', 0),
        ('a bracketed schema', N'[dbo].SyncCustomer_utx', 0),
        ('a bracket inside', N'dbo.Sync]Customer', 0),
        ('double quotes', N'"dbo"."SyncCustomer_utx"', 0),
        ('a single quote', N'dbo.Sync''Customer', 0),
        ('three parts', N'Other.dbo.SyncCustomer_utx', 0),
        ('three parts, no schema', N'Other..SyncCustomer_utx', 0),
        ('four parts', N'Linked.Other.dbo.SyncCustomer_utx', 0),
        ('a part after the name', N'dbo.SyncCustomer_utx.Extra', 0),
        ('two dots', N'dbo..SyncCustomer_utx', 0),
        ('a leading space', N' dbo.SyncCustomer_utx', 0),
        ('a trailing space', N'dbo.SyncCustomer_utx ', 0),
        ('a space after the dot', N'dbo. SyncCustomer_utx', 0),
        ('a space inside', N'dbo.Sync Customer', 0),
        ('a semicolon', N'dbo.SyncCustomer_utx;', 0),
        ('a second statement', N'dbo.SyncCustomer_utx; DROP TABLE dbo.SyncQueue', 0),
        ('a line comment', N'dbo.SyncCustomer_utx--', 0),
        ('a block comment', N'dbo.SyncCustomer_utx/**/', 0),
        ('a tab', N'dbo.SyncCustomer_utx' + NCHAR(9), 0),
        ('a line break', N'dbo.SyncCustomer_utx' + NCHAR(13) + NCHAR(10), 0),
        ('a no-break space', N'dbo.SyncCustomer_utx' + NCHAR(160), 0),
        ('a Cyrillic C', N'dbo.Sync' + NCHAR(1057) + N'ustomer_utx', 0),
        ('a letter outside ASCII', N'dbo.Synk' + NCHAR(246), 0),
        ('a fullwidth digit', N'dbo.Sync' + NCHAR(65298), 0),
        ('a digit first', N'dbo.2Sync', 0),
        ('a temporary procedure', N'dbo.#Sync', 0),
        ('a global temporary procedure', N'dbo.##Sync', 0),
        ('an @', N'dbo.@Sync', 0),
        ('a $', N'dbo.Sync$', 0),
        ('a hyphen', N'dbo.Sync-Customer', 0),
        ('sp_', N'dbo.sp_Sync', 0),
        ('SP_', N'dbo.SP_Sync', 0),
        ('xp_', N'dbo.xp_cmdshell', 0),
        ('Xp_', N'dbo.Xp_cmdshell', 0),
        ('a name of 129 characters', N'dbo.' + REPLICATE(N'j', 129), 0)
    ) AS v([Case], JobProcedure, IsValid);

    SELECT
        e.[Case],
        e.JobProcedure,
        dbo.JobProcedureIsValid_fn(e.JobProcedure) AS IsValid
    INTO #Actual
    FROM #Expected AS e;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- Bound and reading no data, it gives SQL Server no reason to guard a statement that calls it with a
-- spool (Halloween protection). The properties:
-- https://learn.microsoft.com/sql/t-sql/functions/objectpropertyex-transact-sql
CREATE PROCEDURE JobProcedureIsValid_fnTests.[test JobProcedureIsValid_fn is schema bound and reads no data when deployed]
AS
BEGIN
    DECLARE @Id INT = OBJECT_ID(N'dbo.JobProcedureIsValid_fn', N'FN');
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

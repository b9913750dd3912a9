SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'JobProcedureToRun_fnTests';
GO
-- dbo.Lock_ItemKeys_utx stands for a job procedure: a T-SQL procedure that dbo holds in
-- every relq database. The class's own procedure below is one dbo does not hold.
CREATE PROCEDURE JobProcedureToRun_fnTests.OnlyHere
AS
BEGIN
    RETURN 0;
END;
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
CREATE PROCEDURE JobProcedureToRun_fnTests.[test JobProcedureToRun_fn returns the quoted name when dbo holds a procedure of that name]
AS
BEGIN
    DECLARE @Actual NVARCHAR(300) = dbo.JobProcedureToRun_fn(N'dbo.Lock_ItemKeys_utx');

    EXEC tSQLt.AssertEqualsString @Expected = N'[dbo].[Lock_ItemKeys_utx]', @Actual = @Actual;
END;
GO
-- Each name is one JobProcedureIsValid_fn refuses, or one of no T-SQL procedure in dbo:
-- the procedure of another schema exists, and would run if the name were run as written.
CREATE PROCEDURE JobProcedureToRun_fnTests.[test JobProcedureToRun_fn returns NULL when the name is refused or dbo holds no procedure of that name]
AS
BEGIN
    SELECT
        CAST(v.[Case] AS VARCHAR(60)) AS [Case],
        CAST(v.JobProcedure AS NVARCHAR(400)) AS JobProcedure,
        CAST(NULL AS NVARCHAR(300)) AS ToRun
    INTO #Expected
    FROM (
        VALUES
        ('one part', N'Lock_ItemKeys_utx'),
        ('brackets', N'[dbo].[Lock_ItemKeys_utx]'),
        ('three parts', N'tempdb.dbo.Lock_ItemKeys_utx'),
        ('another schema', N'JobProcedureToRun_fnTests.OnlyHere'),
        ('dbo and the name of another schema''s procedure', N'dbo.OnlyHere'),
        ('a procedure nobody has', N'dbo.JobProcedureToRun_fnTests_NoSuchJob'),
        ('a table', N'dbo.AppSettings'),
        ('a function', N'dbo.JobProcedureIsValid_fn'),
        ('a view', N'dbo.QueueHealth_V'),
        ('a system procedure', N'dbo.sp_who'),
        ('NULL', NULL)
    ) AS v([Case], JobProcedure);

    SELECT
        e.[Case],
        e.JobProcedure,
        dbo.JobProcedureToRun_fn(e.JobProcedure) AS ToRun
    INTO #Actual
    FROM #Expected AS e;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- A synonym of that name in dbo, pointing at a procedure: EXEC would run its target,
-- which could be in any schema or database. tSQLt rolls the synonym back.
CREATE PROCEDURE JobProcedureToRun_fnTests.[test JobProcedureToRun_fn returns NULL when the name is a synonym in dbo]
AS
BEGIN
    DECLARE @Actual NVARCHAR(300);
    CREATE SYNONYM dbo.JobProcedureToRun_fnTests_Synonym FOR dbo.Lock_ItemKeys_utx;

    SET @Actual = dbo.JobProcedureToRun_fn(N'dbo.JobProcedureToRun_fnTests_Synonym');

    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Actual;
END;
GO
-- A drain's caller (a QueueAdmin member) has no permission on the job procedure, so
-- OBJECT_ID answers NULL to it; the function looks as its owner. The user and its grant
-- end with the test's transaction; the impersonation runs in a batch of its own, which
-- ends it (REVERT) before tSQLt's assertions, as the caller may not run them.
-- (Metadata visibility: https://learn.microsoft.com/sql/relational-databases/security/metadata-visibility-configuration)
CREATE PROCEDURE JobProcedureToRun_fnTests.[test JobProcedureToRun_fn finds the procedure when its caller cannot see it]
AS
BEGIN
    DECLARE @SeenByCaller INT;
    DECLARE @Actual NVARCHAR(300);
    CREATE USER JobProcedureToRun_fnTestsCaller WITHOUT LOGIN;
    -- relq:allow unknown-role because the grantee is the user this test creates, rolled back with it
    GRANT EXECUTE ON OBJECT::dbo.JobProcedureToRun_fn TO JobProcedureToRun_fnTestsCaller;

    EXEC sys.sp_executesql
        N'EXECUTE AS USER = N''JobProcedureToRun_fnTestsCaller'';
        SET @SeenByCaller = OBJECT_ID(N''dbo.Lock_ItemKeys_utx'', N''P'');
        SET @Actual = dbo.JobProcedureToRun_fn(N''dbo.Lock_ItemKeys_utx'');
        REVERT;',
        N'@SeenByCaller INT OUTPUT, @Actual NVARCHAR(300) OUTPUT',
        @SeenByCaller = @SeenByCaller OUTPUT,
        @Actual = @Actual OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @SeenByCaller, @Message = N'OBJECT_ID as the caller';
    EXEC tSQLt.AssertEqualsString @Expected = N'[dbo].[Lock_ItemKeys_utx]', @Actual = @Actual;
END;
GO
-- EXECUTE AS OWNER is what lets it see past its caller: sys.sql_modules shows it as -2
-- (https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-sql-modules-transact-sql).
CREATE PROCEDURE JobProcedureToRun_fnTests.[test JobProcedureToRun_fn runs as its owner when deployed]
AS
BEGIN
    DECLARE @ExecuteAs INT = (
        SELECT m.execute_as_principal_id
        FROM sys.sql_modules AS m
        WHERE m.object_id = OBJECT_ID(N'dbo.JobProcedureToRun_fn', N'FN')
    );

    EXEC tSQLt.AssertEquals @Expected = -2, @Actual = @ExecuteAs;
END;
GO

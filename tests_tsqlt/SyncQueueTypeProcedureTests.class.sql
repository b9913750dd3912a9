SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'SyncQueueTypeProcedureTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The CHECK on the fake: tSQLt.ApplyConstraint adds it under its own name, so SQL Server's
-- error 547 names it as on the real table. The fake has no foreign key to the job types.
CREATE PROCEDURE SyncQueueTypeProcedureTests.ArrangeConstraint
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueTypeProcedure';
    EXEC tSQLt.ApplyConstraint
        @TableName = N'dbo.SyncQueueTypeProcedure',
        @ConstraintName = N'SyncQueueTypeProcedure_IsRunBy_DboProcedure';
END;
GO
CREATE PROCEDURE SyncQueueTypeProcedureTests.[test SyncQueueTypeProcedure takes a row when its JobProcedure is dbo and a name]
AS
BEGIN
    DECLARE @Rows INT;
    EXEC SyncQueueTypeProcedureTests.ArrangeConstraint;

    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.SyncCustomerSync_utx');

    SELECT @Rows = COUNT(*) FROM dbo.SyncQueueTypeProcedure;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO
-- Each JobProcedure the drain must never run, one INSERT apiece: each fails alone with
-- 547 naming the CHECK, and no row is left.
CREATE PROCEDURE SyncQueueTypeProcedureTests.[test SyncQueueTypeProcedure refuses with 547 naming its CHECK each JobProcedure when it is not dbo and a name]
AS
BEGIN
    DECLARE @Case VARCHAR(60);
    DECLARE @JobProcedure NVARCHAR(300);
    DECLARE @Rows INT;
    CREATE TABLE #Refused (
        [Case] VARCHAR(60) COLLATE DATABASE_DEFAULT NOT NULL,
        ErrorNumber INT NULL,
        NamesCheck BIT NOT NULL
    );
    DECLARE @Names TABLE ([Case] VARCHAR(60) NOT NULL PRIMARY KEY, JobProcedure NVARCHAR(300) NOT NULL);
    INSERT INTO @Names ([Case], JobProcedure)
    VALUES
    ('another schema', N'Sales.SyncCustomerSync_utx'),
    ('another database', N'Other.dbo.SyncCustomerSync_utx'),
    ('another server', N'Linked.Other.dbo.SyncCustomerSync_utx'),
    ('one part', N'SyncCustomerSync_utx'),
    ('brackets', N'[dbo].[SyncCustomerSync_utx]'),
    ('a second statement', N'dbo.SyncCustomerSync_utx; DROP TABLE dbo.SyncQueue');
    EXEC SyncQueueTypeProcedureTests.ArrangeConstraint;

    SET @Case = (SELECT MIN(n.[Case]) FROM @Names AS n);
    WHILE (@Case IS NOT NULL)
        BEGIN
            SET @JobProcedure = (
                SELECT n.JobProcedure FROM @Names AS n
                WHERE n.[Case] = @Case
            );
            BEGIN TRY
                INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
                VALUES ('CustomerSync', @JobProcedure);
                INSERT INTO #Refused ([Case], ErrorNumber, NamesCheck) VALUES (@Case, NULL, 0);
            END TRY
            BEGIN CATCH
                INSERT INTO #Refused ([Case], ErrorNumber, NamesCheck)
                VALUES (
                    @Case,
                    ERROR_NUMBER(),
                    CASE
                        WHEN ERROR_MESSAGE() LIKE N'%SyncQueueTypeProcedure[_]IsRunBy[_]DboProcedure%' THEN 1 ELSE 0
                    END
                );
            END CATCH;
            SET @Case = (
                SELECT MIN(n.[Case]) FROM @Names AS n
                WHERE n.[Case] > @Case
            );
        END;

    SELECT
        n.[Case],
        547 AS ErrorNumber,
        CAST(1 AS BIT) AS NamesCheck
    INTO #Expected
    FROM @Names AS n;
    SELECT @Rows = COUNT(*) FROM dbo.SyncQueueTypeProcedure;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Refused';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows taken';
END;
GO
CREATE PROCEDURE SyncQueueTypeProcedureTests.[test SyncQueueTypeProcedure refuses an update with 547 when the JobProcedure becomes one of another schema]
AS
BEGIN
    EXEC SyncQueueTypeProcedureTests.ArrangeConstraint;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.SyncCustomerSync_utx');
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 547,
        @ExpectedMessagePattern = N'%SyncQueueTypeProcedure[_]IsRunBy[_]DboProcedure%';

    UPDATE dbo.SyncQueueTypeProcedure
    SET JobProcedure = N'Sales.SyncCustomerSync_utx'
    WHERE [Type] = 'CustomerSync';
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_TransportQueue_utxTests';
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_TransportQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Compares dbo.TransportQueue with the #Expected table the calling test filled.
CREATE PROCEDURE Add_TransportQueue_utxTests.AssertQueuesAreExpected
    @Message NVARCHAR(MAX) = NULL
AS
BEGIN
    SELECT
        q.Queue,
        q.Endpoint,
        q.Machine
    INTO #Actual
    FROM dbo.TransportQueue AS q;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = @Message;
END;
GO
-- Calls the procedure with a bad name and asserts that it raised 735707.
CREATE PROCEDURE Add_TransportQueue_utxTests.AssertRefused
    @Endpoint VARCHAR(400),
    @Machine VARCHAR(400) = NULL,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Queue VARCHAR(255);
    BEGIN TRY
        EXEC dbo.Add_TransportQueue_utx
            @Endpoint = @Endpoint,
            @Machine = @Machine,
            @Queue = @Queue OUTPUT;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx declares the primary queue when Machine is NULL]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Queue VARCHAR(255);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';

    EXEC @RetCode = dbo.Add_TransportQueue_utx
        @Endpoint = 'Sales',
        @Queue = @Queue OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEqualsString @Expected = 'Sales', @Actual = @Queue, @Message = N'@Queue';
    -- Text columns of a # table take tempdb's collation unless COLLATE DATABASE_DEFAULT gives them
    -- the database's, so that comparing them with the tables' never fails on a collation conflict
    -- (https://learn.microsoft.com/sql/relational-databases/collations/set-or-change-the-column-collation).
    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx declares the secondary queue when its primary queue exists]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Queue VARCHAR(255);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);

    EXEC @RetCode = dbo.Add_TransportQueue_utx
        @Endpoint = 'Sales',
        @Machine = 'Web01',
        @Queue = @Queue OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEqualsString @Expected = 'Sales.Web01', @Actual = @Queue, @Message = N'@Queue';
    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine)
    VALUES
    ('Sales', 'Sales', NULL),
    ('Sales.Web01', 'Sales', 'Web01');
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx changes nothing and returns 0 when the queue exists]
AS
BEGIN
    DECLARE @PrimaryRetCode INT;
    DECLARE @SecondaryRetCode INT;
    DECLARE @PrimaryQueue VARCHAR(255);
    DECLARE @SecondaryQueue VARCHAR(255);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine)
    VALUES
    ('Sales', 'Sales', NULL),
    ('Sales.Web01', 'Sales', 'Web01');

    EXEC @PrimaryRetCode = dbo.Add_TransportQueue_utx
        @Endpoint = 'Sales',
        @Queue = @PrimaryQueue OUTPUT;
    EXEC @SecondaryRetCode = dbo.Add_TransportQueue_utx
        @Endpoint = 'Sales',
        @Machine = 'Web01',
        @Queue = @SecondaryQueue OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @PrimaryRetCode, @Message = N'primary: return code';
    EXEC tSQLt.AssertEqualsString @Expected = 'Sales', @Actual = @PrimaryQueue, @Message = N'primary: @Queue';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @SecondaryRetCode, @Message = N'secondary: return code';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Sales.Web01', @Actual = @SecondaryQueue, @Message = N'secondary: @Queue';
    -- The fake has no primary key: a second insert would show as a duplicate row.
    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine)
    VALUES
    ('Sales', 'Sales', NULL),
    ('Sales.Web01', 'Sales', 'Web01');
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx raises 735707 and writes nothing when the primary is missing]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    -- Another endpoint's primary does not count.
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Billing', 'Billing', NULL);

    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = 'Sales', @Machine = 'Web01', @Case = N'secondary queue without its primary';

    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine) VALUES ('Billing', 'Billing', NULL);
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx raises 735707 and writes nothing when the endpoint is NULL or blank]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';

    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = NULL, @Case = N'NULL endpoint';
    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = '', @Case = N'empty endpoint';
    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = '   ', @Case = N'blank endpoint';
    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = 'Sales ', @Case = N'trailing space';
    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = '', @Machine = 'Web01', @Case = N'empty endpoint with a machine';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.TransportQueue';
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx raises 735707 and writes nothing when a name has a dot]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    -- The primary exists, so only the dot can be the reason for refusing the secondary.
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);

    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = 'Sales.EU', @Case = N'primary, endpoint with a dot';
    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = 'Sales.EU', @Machine = 'Web01', @Case = N'secondary, endpoint with a dot';
    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = 'Sales', @Machine = 'Web01.corp', @Case = N'secondary, machine with a dot';
    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = 'Sales', @Machine = '.', @Case = N'secondary, machine that is a dot';

    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx raises 735707 and writes nothing when the machine is blank]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);

    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = 'Sales', @Machine = '', @Case = N'empty machine';
    EXEC Add_TransportQueue_utxTests.AssertRefused @Endpoint = 'Sales', @Machine = '  ', @Case = N'blank machine';
    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = 'Sales', @Machine = 'Web01 ', @Case = N'machine with a trailing space';

    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx raises 735707 and writes nothing when the address is over 255 characters]
AS
BEGIN
    DECLARE @LongEndpoint VARCHAR(400) = REPLICATE('b', 200);
    DECLARE @TooLongEndpoint VARCHAR(400) = REPLICATE('a', 256);
    DECLARE @Machine VARCHAR(400) = REPLICATE('m', 55);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES (@LongEndpoint, @LongEndpoint, NULL);

    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = @TooLongEndpoint, @Case = N'primary of 256 characters';
    -- 200 + 1 (the dot) + 55 = 256 characters; the primary exists.
    EXEC Add_TransportQueue_utxTests.AssertRefused
        @Endpoint = @LongEndpoint, @Machine = @Machine, @Case = N'secondary of 256 characters';

    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine) VALUES (@LongEndpoint, @LongEndpoint, NULL);
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx declares the queue when its address has exactly 255 characters]
AS
BEGIN
    DECLARE @Endpoint VARCHAR(400) = REPLICATE('b', 250);
    DECLARE @LongestPrimary VARCHAR(400) = REPLICATE('a', 255);
    DECLARE @LongestSecondary VARCHAR(400) = REPLICATE('b', 250) + '.mmmm';
    DECLARE @PrimaryRetCode INT;
    DECLARE @SecondaryRetCode INT;
    DECLARE @PrimaryQueue VARCHAR(255);
    DECLARE @SecondaryQueue VARCHAR(255);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES (@Endpoint, @Endpoint, NULL);

    EXEC @PrimaryRetCode = dbo.Add_TransportQueue_utx
        @Endpoint = @LongestPrimary,
        @Queue = @PrimaryQueue OUTPUT;
    -- 250 + 1 (the dot) + 4 = 255 characters.
    EXEC @SecondaryRetCode = dbo.Add_TransportQueue_utx
        @Endpoint = @Endpoint,
        @Machine = 'mmmm',
        @Queue = @SecondaryQueue OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @PrimaryRetCode, @Message = N'primary: return code';
    EXEC tSQLt.AssertEqualsString
        @Expected = @LongestPrimary, @Actual = @PrimaryQueue, @Message = N'primary: @Queue';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @SecondaryRetCode, @Message = N'secondary: return code';
    EXEC tSQLt.AssertEqualsString
        @Expected = @LongestSecondary, @Actual = @SecondaryQueue, @Message = N'secondary: @Queue';
    CREATE TABLE #Expected (
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Endpoint VARCHAR(255) COLLATE DATABASE_DEFAULT NULL,
        Machine VARCHAR(255) COLLATE DATABASE_DEFAULT NULL
    );
    INSERT INTO #Expected (Queue, Endpoint, Machine)
    VALUES
    (@Endpoint, @Endpoint, NULL),
    (@LongestSecondary, @Endpoint, 'mmmm'),
    (@LongestPrimary, @LongestPrimary, NULL);
    EXEC Add_TransportQueue_utxTests.AssertQueuesAreExpected;
END;
GO
--[@tSQLt:NoTransaction]('Add_TransportQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_TransportQueue_utxTests.[test Add_TransportQueue_utx raises 735702 and writes nothing when no transaction is open]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Queue VARCHAR(255);
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';

    BEGIN TRY
        EXEC dbo.Add_TransportQueue_utx
            @Endpoint = 'Sales',
            @Queue = @Queue OUTPUT;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735702, @Actual = @ErrorNumber;
    SELECT @Rows = COUNT(*) FROM dbo.TransportQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows written';
END;
GO

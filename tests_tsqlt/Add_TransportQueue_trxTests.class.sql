SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_TransportQueue_trxTests';
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Add_TransportQueue_trxTests.[test Add_TransportQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Add_TransportQueue_trx @Endpoint = 'Sales';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_TransportQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Add_TransportQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_TransportQueue_trxTests.[test Add_TransportQueue_trx declares and commits a primary then a secondary queue when both are valid]
AS
BEGIN
    DECLARE @PrimaryRetCode INT;
    DECLARE @SecondaryRetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @Matching INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';

    EXEC @PrimaryRetCode = dbo.Add_TransportQueue_trx @Endpoint = 'Sales';
    EXEC @SecondaryRetCode = dbo.Add_TransportQueue_trx @Endpoint = 'Sales', @Machine = 'Web01';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @PrimaryRetCode, @Message = N'primary: return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @SecondaryRetCode, @Message = N'secondary: return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables.
    SELECT @Rows = COUNT(*) FROM dbo.TransportQueue;
    SELECT @Matching = COUNT(*)
    FROM dbo.TransportQueue AS q
    WHERE
        (q.Queue = 'Sales' AND q.Endpoint = 'Sales' AND q.Machine IS NULL)
        OR (q.Queue = 'Sales.Web01' AND q.Endpoint = 'Sales' AND q.Machine = 'Web01');
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'rows';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Matching, @Message = N'rows as declared';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs: the test looks inside the transaction left open, then rolls back.
--[@tSQLt:NoTransaction]('Add_TransportQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_TransportQueue_trxTests.[test Add_TransportQueue_trx raises 735707 and declares nothing when the endpoint has a dot]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @RowsInTransaction INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';

    BEGIN TRY
        EXEC dbo.Add_TransportQueue_trx @Endpoint = 'Sales.EU';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SELECT @RowsInTransaction = COUNT(*) FROM dbo.TransportQueue;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction, @Message = N'rows in the transaction';
    SELECT @Rows = COUNT(*) FROM dbo.TransportQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows after the rollback';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Add_TransportQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_TransportQueue_trxTests.[test Add_TransportQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Add_TransportQueue_trx @Endpoint = 'Sales';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_LifoStack_trxTests';
GO
-- The stack faked with its identity and its EnqueuedAt default. In a NoTransaction test
-- the fake holds the committed rows; tSQLt puts the real table back after the test.
CREATE PROCEDURE Send_LifoStack_trxTests.FakeStack
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Identity = 1, @Defaults = 1;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_LifoStack_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Send_LifoStack_trxTests.[test Send_LifoStack_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Send_LifoStack_trxTests.FakeStack;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Send_LifoStack_trx @Payload = 0x01;
END;
GO
--[@tSQLt:NoTransaction]('Send_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_LifoStack_trxTests.[test Send_LifoStack_trx writes and commits the message when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @RowCount INT;
    DECLARE @Matching INT;
    EXEC Send_LifoStack_trxTests.FakeStack;

    EXEC @RetCode = dbo.Send_LifoStack_trx @Payload = 0x0A0B0C;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT @RowCount = COUNT(*) FROM dbo.LifoStack;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @RowCount, @Message = N'rows in the stack';
    SELECT @Matching = COUNT(*)
    FROM dbo.LifoStack AS s
    WHERE s.Payload = 0x0A0B0C AND s.Id IS NOT NULL AND s.EnqueuedAt IS NOT NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching, @Message = N'the committed row with the payload';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Send_LifoStack_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_LifoStack_trxTests.[test Send_LifoStack_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Send_LifoStack_trxTests.FakeStack;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Send_LifoStack_trx @Payload = 0x01;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO

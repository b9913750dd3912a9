SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_StrictFifoQueue_trxTests';
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Send_StrictFifoQueue_trxTests.[test Send_StrictFifoQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue', @Identity = 1, @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Send_StrictFifoQueue_trx @Payload = 0xC0FFEE;
END;
GO
-- Run after each NoTransaction test: a procedure that raised an error inside
-- tSQLt's TRY...CATCH may leave a transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_StrictFifoQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- A NoTransaction test makes no permanent objects, so it counts rows instead of comparing tables;
-- the fake holds the committed row, and tSQLt puts the real table back afterwards.
--[@tSQLt:NoTransaction]('Send_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_StrictFifoQueue_trxTests.[test Send_StrictFifoQueue_trx writes and commits the message when no transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @Matching INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue', @Identity = 1, @Defaults = 1;

    EXEC @RetCode = dbo.Send_StrictFifoQueue_trx @Payload = 0xC0FFEE;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT @Rows = COUNT(*) FROM dbo.StrictFifoQueue;
    SELECT @Matching = COUNT(*) FROM dbo.StrictFifoQueue AS q
    WHERE q.Payload = 0xC0FFEE;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'messages in the queue';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching, @Message = N'messages with the payload sent';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Send_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_StrictFifoQueue_trxTests.[test Send_StrictFifoQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue', @Identity = 1, @Defaults = 1;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Send_StrictFifoQueue_trx @Payload = 0xC0FFEE;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO

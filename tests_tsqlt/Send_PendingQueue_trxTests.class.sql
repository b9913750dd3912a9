SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_PendingQueue_trxTests';
GO
-- The queue faked with its identity and its EnqueuedAt default. In a NoTransaction test
-- the fake holds the committed rows; tSQLt puts the real table back after the test.
CREATE PROCEDURE Send_PendingQueue_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.PendingQueue', @Identity = 1, @Defaults = 1;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_PendingQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Send_PendingQueue_trxTests.[test Send_PendingQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Send_PendingQueue_trxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Send_PendingQueue_trx @Payload = 0x01;
END;
GO
--[@tSQLt:NoTransaction]('Send_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_PendingQueue_trxTests.[test Send_PendingQueue_trx writes and commits the message when no transaction is open]
AS
BEGIN
    DECLARE @DueAt DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @RowCount INT;
    DECLARE @Matching INT;
    EXEC Send_PendingQueue_trxTests.FakeQueue;

    EXEC @RetCode = dbo.Send_PendingQueue_trx @Payload = 0x0A0B0C, @DueAt = @DueAt;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT @RowCount = COUNT(*) FROM dbo.PendingQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @RowCount, @Message = N'rows in the queue';
    SELECT @Matching = COUNT(*)
    FROM dbo.PendingQueue AS q
    WHERE q.Payload = 0x0A0B0C AND q.DueAt = @DueAt AND q.Id IS NOT NULL AND q.EnqueuedAt IS NOT NULL;
    EXEC tSQLt.AssertEquals
        @Expected = 1, @Actual = @Matching, @Message = N'the committed row with the payload and @DueAt';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Send_PendingQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_PendingQueue_trxTests.[test Send_PendingQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Send_PendingQueue_trxTests.FakeQueue;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Send_PendingQueue_trx @Payload = 0x01;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_TransportMessage_trxTests';
GO
-- One declared queue, Sales, and an empty message table whose RowVersion still
-- increments (@Identity) and whose defaults still apply (@Defaults).
CREATE PROCEDURE Send_TransportMessage_trxTests.FakeTransport
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage', @Identity = 1, @Defaults = 1;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Send_TransportMessage_trxTests.[test Send_TransportMessage_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Send_TransportMessage_trxTests.FakeTransport;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Send_TransportMessage_trx @Queue = 'Sales';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_TransportMessage_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Send_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_TransportMessage_trxTests.[test Send_TransportMessage_trx sends and commits the message when it is valid]
AS
BEGIN
    DECLARE @Id UNIQUEIDENTIFIER = NEWID();
    DECLARE @Expires DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Rows INT;
    DECLARE @Matching INT;
    EXEC Send_TransportMessage_trxTests.FakeTransport;

    EXEC @RetCode = dbo.Send_TransportMessage_trx
        @Queue = 'Sales',
        @Id = @Id,
        @CorrelationId = 'conversation-1',
        @ReplyToAddress = 'Billing.Web01',
        @Expires = @Expires,
        @Headers = N'{"type":"OrderPlaced"}',
        @Body = 0x0102FF;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables.
    SELECT @Rows = COUNT(*) FROM dbo.TransportMessage;
    SELECT @Matching = COUNT(*)
    FROM dbo.TransportMessage AS m
    WHERE
        m.Queue = 'Sales'
        AND m.Id = @Id
        AND m.CorrelationId = 'conversation-1'
        AND m.ReplyToAddress = 'Billing.Web01'
        AND m.Recoverable = 1
        AND m.Expires = @Expires
        AND m.Headers = N'{"type":"OrderPlaced"}'
        AND m.Body = 0x0102FF;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'rows';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching, @Message = N'the row carries the message as sent';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs: the test looks inside the transaction left open, then rolls back.
--[@tSQLt:NoTransaction]('Send_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_TransportMessage_trxTests.[test Send_TransportMessage_trx raises 735707 and sends nothing when the queue is unknown]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @RowsInTransaction INT;
    DECLARE @Rows INT;
    EXEC Send_TransportMessage_trxTests.FakeTransport;

    BEGIN TRY
        EXEC dbo.Send_TransportMessage_trx @Queue = 'Shipping';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SELECT @RowsInTransaction = COUNT(*) FROM dbo.TransportMessage;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowsInTransaction, @Message = N'rows in the transaction';
    SELECT @Rows = COUNT(*) FROM dbo.TransportMessage;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows after the rollback';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Send_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_TransportMessage_trxTests.[test Send_TransportMessage_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Send_TransportMessage_trxTests.FakeTransport;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Send_TransportMessage_trx @Queue = 'Sales';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_TransportMessage_trxTests';
GO
-- Two declared queues, Sales and Billing, and four messages with explicit RowVersions
-- (the fake has no @Identity): 1: Sales, expired (the oldest, yet never to be
-- delivered); 2: Billing; 3: Sales, never expires; 4: Sales, expires in an hour.
CREATE PROCEDURE Receive_TransportMessage_trxTests.FakeTransport
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine)
    VALUES
    ('Sales', 'Sales', NULL),
    ('Billing', 'Billing', NULL);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage', @Defaults = 1;
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers, Body)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}', 0x01),
    ('Billing', 2, NEWID(), 1, NULL, N'{}', 0x02),
    ('Sales', 3, NEWID(), 1, NULL, N'{}', 0x03),
    ('Sales', 4, NEWID(), 1, @Later, N'{}', 0x04);
END;
GO
-- Asserts the RowVersions left in dbo.TransportMessage, as a list such as '1,2'. A
-- NoTransaction test makes no permanent objects, so it compares values, not tables.
CREATE PROCEDURE Receive_TransportMessage_trxTests.AssertRemaining
    @Expected VARCHAR(100),
    @Message NVARCHAR(200) = NULL
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CAST(m.[RowVersion] AS VARCHAR(20)), ',') WITHIN GROUP (ORDER BY m.[RowVersion]), ''
        )
    FROM dbo.TransportMessage AS m;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = @Message;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Receive_TransportMessage_trxTests.[test Receive_TransportMessage_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Receive_TransportMessage_trxTests.FakeTransport;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Receive_TransportMessage_trx @Queue = 'Sales';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_TransportMessage_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Receive_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_TransportMessage_trxTests.[test Receive_TransportMessage_trx receives the oldest unexpired message and commits when BatchSize is 1]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_TransportMessage_trxTests.FakeTransport;

    EXEC @RetCode = dbo.Receive_TransportMessage_trx @Queue = 'Sales', @BatchSize = 1;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- 3 is gone: 1 is older but expired, 2 is in another queue, 4 is newer.
    EXEC Receive_TransportMessage_trxTests.AssertRemaining @Expected = '1,2,4';
END;
GO
--[@tSQLt:NoTransaction]('Receive_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_TransportMessage_trxTests.[test Receive_TransportMessage_trx receives every unexpired message and commits when BatchSize is 10]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Receive_TransportMessage_trxTests.FakeTransport;

    EXEC @RetCode = dbo.Receive_TransportMessage_trx @Queue = 'Sales', @BatchSize = 10;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Receive_TransportMessage_trxTests.AssertRemaining
        @Expected = '1,2', @Message = N'the expired message and the other queue''s remain';
END;
GO
--[@tSQLt:NoTransaction]('Receive_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_TransportMessage_trxTests.[test Receive_TransportMessage_trx raises 735707 and removes nothing when an argument is bad]
AS
BEGIN
    DECLARE @UnknownQueueError INT;
    DECLARE @BadBatchSizeError INT;
    EXEC Receive_TransportMessage_trxTests.FakeTransport;

    BEGIN TRY
        EXEC dbo.Receive_TransportMessage_trx @Queue = 'Shipping';
    END TRY
    BEGIN CATCH
        SET @UnknownQueueError = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    BEGIN TRY
        EXEC dbo.Receive_TransportMessage_trx @Queue = 'Sales', @BatchSize = 1001;
    END TRY
    BEGIN CATCH
        SET @BadBatchSizeError = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @UnknownQueueError, @Message = N'unknown queue';
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @BadBatchSizeError, @Message = N'BatchSize 1001';
    EXEC Receive_TransportMessage_trxTests.AssertRemaining @Expected = '1,2,3,4';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Receive_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_TransportMessage_trxTests.[test Receive_TransportMessage_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Receive_TransportMessage_trxTests.FakeTransport;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Receive_TransportMessage_trx @Queue = 'Sales';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
-- The failure counts (dbo.MessageFailure) the receive reads and deletes.
-- The queue holds three messages of transport queue Sales, RowVersions 1 to 3; a receive of two takes 1 and 2. Message 1 failed twice
-- before and 3 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_TransportMessage_trxTests.FakeQueueAndFailures
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage', @Defaults = 1;
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers, Body)
    VALUES
    ('Sales', 1, NEWID(), 1, NULL, N'{}', 0x01),
    ('Sales', 2, NEWID(), 1, NULL, N'{}', 0x02),
    ('Sales', 3, NEWID(), 1, NULL, N'{}', 0x03);
    EXEC tSQLt.FakeTable @TableName = N'dbo.MessageFailure';
    INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
    VALUES
    ('TransportMessage', 1, 2, N'twice', '2024-01-02T00:00:00', '2024-01-02T00:05:00'),
    ('TransportMessage', 3, 1, N'once', '2024-01-02T00:00:00', '2024-01-02T00:00:00'),
    ('FifoQueue', 2, 4, N'other', '2024-01-02T00:00:00', '2024-01-02T00:05:00');
END;
GO
-- Asserts the counts left, as a sorted list of Kind:MessageKey:Failures.
CREATE PROCEDURE Receive_TransportMessage_trxTests.AssertFailuresLeft
    @Expected VARCHAR(400)
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CONCAT(f.Kind, ':', f.MessageKey, ':', f.Failures), ',') WITHIN GROUP (
                ORDER BY f.Kind, f.MessageKey
            ),
            ''
        )
    FROM dbo.MessageFailure AS f;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = N'failure counts left';
END;
GO
--[@tSQLt:NoTransaction]('Receive_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_TransportMessage_trxTests.[test Receive_TransportMessage_trx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_trxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_TransportMessage_trx @Queue = 'Sales', @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_TransportMessage_trxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,TransportMessage:3:1';
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Purge_TransportMessage_trxTests';
GO
-- Asserts the RowVersions left in dbo.TransportMessage, as a list such as '1,2'. A
-- NoTransaction test makes no permanent objects, so it compares values, not tables.
-- The procedure's result set (Purged) cannot be captured: INSERT ... EXEC would open
-- the transaction a _trx refuses.
CREATE PROCEDURE Purge_TransportMessage_trxTests.AssertRemaining
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
-- Calls the purge with a bad @BatchSize and asserts that it raised 735707.
CREATE PROCEDURE Purge_TransportMessage_trxTests.AssertRefused
    @BatchSize INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    BEGIN TRY
        EXEC dbo.Purge_TransportMessage_trx @BatchSize = @BatchSize;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Purge_TransportMessage_trx;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Purge_TransportMessage_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx deletes the expired messages and keeps the others when some have expired]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    -- 1 and 3 have expired (in two queues); 2 expires later; 4 never does.
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 2, NEWID(), 1, @Later, N'{}'),
    ('Billing', 3, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 4, NEWID(), 1, NULL, N'{}');

    EXEC @RetCode = dbo.Purge_TransportMessage_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transactions must be committed';
    EXEC Purge_TransportMessage_trxTests.AssertRemaining @Expected = '2,4';
END;
GO
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx deletes every expired message when there are more than BatchSize]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    -- Five expired messages take three transactions of at most two rows: 2, 2, 1.
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 2, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 3, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 4, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 5, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 6, NEWID(), 1, @Later, N'{}'),
    ('Sales', 7, NEWID(), 1, NULL, N'{}');

    EXEC @RetCode = dbo.Purge_TransportMessage_trx @BatchSize = 2;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transactions must be committed';
    EXEC Purge_TransportMessage_trxTests.AssertRemaining @Expected = '6,7';
END;
GO
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx deletes every expired message when their number is a multiple of BatchSize]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    -- Two full batches, then an empty one that ends the loop.
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 2, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 3, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 4, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 5, NEWID(), 1, NULL, N'{}');

    EXEC @RetCode = dbo.Purge_TransportMessage_trx @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_TransportMessage_trxTests.AssertRemaining @Expected = '5';
END;
GO
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx returns 0 and deletes nothing when no message has expired]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers)
    VALUES
    ('Sales', 1, NEWID(), 1, @Later, N'{}'),
    ('Sales', 2, NEWID(), 1, NULL, N'{}');

    EXEC @RetCode = dbo.Purge_TransportMessage_trx @BatchSize = 4000;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_TransportMessage_trxTests.AssertRemaining @Expected = '1,2';
END;
GO
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx raises 735707 and deletes nothing when BatchSize is out of range]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers)
    VALUES ('Sales', 1, NEWID(), 1, @Expired, N'{}');

    EXEC Purge_TransportMessage_trxTests.AssertRefused @BatchSize = NULL, @Case = N'NULL';
    EXEC Purge_TransportMessage_trxTests.AssertRefused @BatchSize = 0, @Case = N'0';
    EXEC Purge_TransportMessage_trxTests.AssertRefused @BatchSize = -1, @Case = N'-1';
    EXEC Purge_TransportMessage_trxTests.AssertRefused @BatchSize = 4001, @Case = N'4001';

    EXEC Purge_TransportMessage_trxTests.AssertRemaining @Expected = '1', @Message = N'the expired message remains';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Purge_TransportMessage_trx;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
--[@tSQLt:NoTransaction]('Purge_TransportMessage_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_TransportMessage_trxTests.[test Purge_TransportMessage_trx deletes the failure counts of the messages it purges when they failed before]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Actual VARCHAR(8000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage';
    EXEC tSQLt.FakeTable @TableName = N'dbo.MessageFailure';
    -- 1 has expired, 2 has not; both failed before. FIFO message 1 has a count of its own.
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}'),
    ('Sales', 2, NEWID(), 1, NULL, N'{}');
    INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
    VALUES
    ('TransportMessage', 1, 2, N'', '2024-01-02T00:00:00', '2024-01-02T00:00:00'),
    ('TransportMessage', 2, 1, N'', '2024-01-02T00:00:00', '2024-01-02T00:00:00'),
    ('FifoQueue', 1, 3, N'', '2024-01-02T00:00:00', '2024-01-02T00:00:00');

    EXEC @RetCode = dbo.Purge_TransportMessage_trx;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_TransportMessage_trxTests.AssertRemaining @Expected = '2';
    SELECT @Actual = STRING_AGG(CONCAT(f.Kind, ':', f.MessageKey), ',') WITHIN GROUP (ORDER BY f.Kind, f.MessageKey)
    FROM dbo.MessageFailure AS f;
    EXEC tSQLt.AssertEqualsString
        @Expected = 'FifoQueue:1,TransportMessage:2', @Actual = @Actual, @Message = N'failure counts left';
END;
GO

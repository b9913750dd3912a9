SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Receive_TransportMessage_utxTests';
GO
-- Two declared queues, Sales and Billing, and an empty message table. RowVersion is
-- a plain BIGINT in the fake (no @Identity): the tests give it explicitly.
CREATE PROCEDURE Receive_TransportMessage_utxTests.FakeTransport
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine)
    VALUES
    ('Sales', 'Sales', NULL),
    ('Billing', 'Billing', NULL);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage', @Defaults = 1;
END;
GO
-- RowVersion 1: Sales, expired (the oldest, yet never to be delivered); 2: Billing;
-- 3: Sales, never expires; 4: Sales, expires in an hour.
CREATE PROCEDURE Receive_TransportMessage_utxTests.AddMessages
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers, Body)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}', 0x01),
    ('Billing', 2, NEWID(), 1, NULL, N'{}', 0x02),
    ('Sales', 3, NEWID(), 1, NULL, N'{}', 0x03),
    ('Sales', 4, NEWID(), 1, @Later, N'{}', 0x04);
END;
GO
-- Compares the RowVersions left in dbo.TransportMessage with the #Expected table
-- the calling test filled.
CREATE PROCEDURE Receive_TransportMessage_utxTests.AssertRemainingAreExpected
    @Message NVARCHAR(MAX) = NULL
AS
BEGIN
    SELECT m.[RowVersion]
    INTO #Actual
    FROM dbo.TransportMessage AS m;
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = @Message;
END;
GO
-- Receives with one bad argument and asserts that it raised 735707.
CREATE PROCEDURE Receive_TransportMessage_utxTests.AssertRefused
    @Queue VARCHAR(400) = 'Sales',
    @BatchSize INT = 1,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    BEGIN TRY
        EXEC dbo.Receive_TransportMessage_utx @Queue = @Queue, @BatchSize = @BatchSize;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
END;
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Receive_TransportMessage_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx takes the oldest unexpired message of the queue when BatchSize is 1]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 1;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    -- 3 is gone: 1 is older but expired, 2 is in another queue, 4 is newer.
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2), (4);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected;
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx takes every unexpired message of the queue when BatchSize is 10]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 10;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected
        @Message = N'the expired message and the other queue''s remain';
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx accepts a BatchSize of 1000 when it is the largest allowed]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 1000;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected;
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx delivers nothing and returns 0 when every message has expired]
AS
BEGIN
    DECLARE @Expired DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers, Body)
    VALUES
    ('Sales', 1, NEWID(), 1, @Expired, N'{}', 0x01),
    ('Sales', 2, NEWID(), 1, @Expired, N'{}', 0x02);

    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 10;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected
        @Message = N'expired messages are left for the purge';
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx returns 0 and changes nothing when the queue is empty]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    INSERT INTO dbo.TransportMessage (Queue, [RowVersion], Id, Recoverable, Expires, Headers, Body)
    VALUES ('Billing', 1, NEWID(), 1, NULL, N'{}', 0x01);

    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected;
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx raises 735707 and removes nothing when the queue is unknown]
AS
BEGIN
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    EXEC Receive_TransportMessage_utxTests.AssertRefused @Queue = 'Shipping', @Case = N'undeclared queue';
    EXEC Receive_TransportMessage_utxTests.AssertRefused @Queue = NULL, @Case = N'NULL queue';

    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2), (3), (4);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected;
END;
GO
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx raises 735707 and removes nothing when BatchSize is out of range]
AS
BEGIN
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    EXEC Receive_TransportMessage_utxTests.AssertRefused @BatchSize = NULL, @Case = N'NULL';
    EXEC Receive_TransportMessage_utxTests.AssertRefused @BatchSize = 0, @Case = N'0';
    EXEC Receive_TransportMessage_utxTests.AssertRefused @BatchSize = -1, @Case = N'-1';
    EXEC Receive_TransportMessage_utxTests.AssertRefused @BatchSize = 1001, @Case = N'1001';

    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2), (3), (4);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected;
END;
GO
-- The receive runs inside tSQLt's transaction; a savepoint stands for the caller's
-- own rollback, and leaves tSQLt's transaction open.
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx puts the messages back when the caller rolls back]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @RowsAfterReceive INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    SAVE TRANSACTION BeforeReceive;
    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 10;
    SELECT @RowsAfterReceive = COUNT(*) FROM dbo.TransportMessage;
    ROLLBACK TRANSACTION BeforeReceive;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @RowsAfterReceive, @Message = N'rows before the rollback';
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2), (3), (4);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected
        @Message = N'the received messages are back after the rollback';
END;
GO
--[@tSQLt:NoTransaction]('Receive_TransportMessage_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx raises 735702 and removes nothing when no transaction is open]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    BEGIN TRY
        EXEC dbo.Receive_TransportMessage_utx @Queue = 'Sales';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735702, @Actual = @ErrorNumber;
    SELECT @Rows = COUNT(*) FROM dbo.TransportMessage;
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Rows, @Message = N'rows left';
END;
GO
-- .NET's TransactionScope defaults to SERIALIZABLE, where SQL Server refuses READPAST:
-- the procedure runs at READ COMMITTED whatever the caller's level.
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx takes the oldest unexpired message of the queue when the caller runs SERIALIZABLE]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeTransport;
    EXEC Receive_TransportMessage_utxTests.AddMessages;

    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 1;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    -- 3 is gone: 1 is older but expired, 2 is in another queue, 4 is newer.
    CREATE TABLE #Expected ([RowVersion] BIGINT NULL);
    INSERT INTO #Expected ([RowVersion]) VALUES (1), (2), (4);
    EXEC Receive_TransportMessage_utxTests.AssertRemainingAreExpected;
END;
GO
-- The failure counts (dbo.MessageFailure) the receive reads and deletes.
-- The queue holds three messages of transport queue Sales, RowVersions 1 to 3; a receive of two takes 1 and 2. Message 1 failed twice
-- before and 3 once; FifoQueue has a count for its own message 2, which is not this one.
CREATE PROCEDURE Receive_TransportMessage_utxTests.FakeQueueAndFailures
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
CREATE PROCEDURE Receive_TransportMessage_utxTests.AssertFailuresLeft
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
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx deletes the counts of the messages it receives when they failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeQueueAndFailures;

    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_TransportMessage_utxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,TransportMessage:3:1';
END;
GO
-- INSERT ... EXEC captures the rows: the receive returns them with a SELECT
-- (https://learn.microsoft.com/sql/t-sql/statements/insert-transact-sql, execute_statement).
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx returns DeliveryCount as one more than the failures when a message failed before]
AS
BEGIN
    DECLARE @Actual VARCHAR(100);
    EXEC Receive_TransportMessage_utxTests.FakeQueueAndFailures;
    CREATE TABLE #Received (
        Id UNIQUEIDENTIFIER,
        CorrelationId VARCHAR(255),
        ReplyToAddress VARCHAR(255),
        Recoverable BIT,
        Expires DATETIME2(7),
        Headers NVARCHAR(MAX),
        Body VARBINARY(MAX),
        [RowVersion] BIGINT,
        DeliveryCount INT
    );

    INSERT INTO #Received
    EXEC dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 2;

    SELECT @Actual = STRING_AGG(CONCAT(r.[RowVersion], ':', r.DeliveryCount), ',') WITHIN GROUP (ORDER BY r.[RowVersion])
    FROM #Received AS r;
    EXEC tSQLt.AssertEqualsString
        @Expected = '1:3,2:1', @Actual = @Actual, @Message = N'key:DeliveryCount';
END;
GO
-- tSQLt's own transaction stays open: only the work after the savepoint is undone, as a
-- consumer's rollback undoes its receive.
CREATE PROCEDURE Receive_TransportMessage_utxTests.[test Receive_TransportMessage_utx keeps the counts when the caller rolls back]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Receive_TransportMessage_utxTests.FakeQueueAndFailures;

    SAVE TRANSACTION BeforeReceive;
    EXEC @RetCode = dbo.Receive_TransportMessage_utx @Queue = 'Sales', @BatchSize = 2;
    ROLLBACK TRANSACTION BeforeReceive;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Receive_TransportMessage_utxTests.AssertFailuresLeft @Expected = 'FifoQueue:2:4,TransportMessage:1:2,TransportMessage:3:1';
END;
GO

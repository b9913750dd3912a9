SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Replay_DeadLetter_trxTests';
GO
-- dbo.Replay_DeadLetter_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked tables back after each); they assert the
-- tables, not the result set, which INSERT ... EXEC could only capture inside the
-- transaction a _trx refuses. The queues keep their identities, which the Send_ procedures
-- read back; the transport has one declared queue, Sales.
CREATE PROCEDURE Replay_DeadLetter_trxTests.FakeTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter';
    EXEC tSQLt.FakeTable @TableName = N'dbo.FifoQueue', @Identity = 1, @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue', @Identity = 1, @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.LifoStack', @Identity = 1, @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.PendingQueue', @Identity = 1, @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage', @Identity = 1, @Defaults = 1;
END;
GO
-- One dead letter of each kind, DeadLetterIds 1 (FIFO) to 5 (transport), and 6, a
-- transport message that expired after it was dead-lettered.
CREATE PROCEDURE Replay_DeadLetter_trxTests.AddLetters
AS
BEGIN
    INSERT INTO dbo.DeadLetter (
        DeadLetterId, Kind, Queue, MessageKey, MessageId, CorrelationId, ReplyToAddress, Recoverable, Expires,
        Headers, DueAt, Payload, EnqueuedAt, DeliveryCount, Error, FirstFailedAt, DeadLetteredAt
    )
    VALUES
    (
        1, 'FifoQueue', NULL, 41, NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, 0x01, '2024-01-01T00:00:01', 5, N'boom', '2024-01-02T00:00:00', '2024-01-03T00:00:00'
    ),
    (
        2, 'StrictFifoQueue', NULL, 42, NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, 0x02, '2024-01-01T00:00:02', 5, N'boom', '2024-01-02T00:00:00', '2024-01-03T00:00:00'
    ),
    (
        3, 'LifoStack', NULL, 43, NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, 0x03, '2024-01-01T00:00:03', 5, N'boom', '2024-01-02T00:00:00', '2024-01-03T00:00:00'
    ),
    (
        4, 'PendingQueue', NULL, 44, NULL, NULL, NULL, NULL, NULL,
        NULL, '2024-01-01T00:00:00', 0x04, '2024-01-01T00:00:04', 5, N'boom', '2024-01-02T00:00:00',
        '2024-01-03T00:00:00'
    ),
    (
        5, 'TransportMessage', 'Sales', 45, '55555555-5555-5555-5555-555555555555', 'order-7', 'Sales.Replies', 0,
        '2099-01-01T00:00:00', N'{"tenant":"a"}', NULL, 0x05, NULL, 5, N'boom', '2024-01-02T00:00:00',
        '2024-01-03T00:00:00'
    ),
    (
        6, 'TransportMessage', 'Sales', 46, '66666666-6666-6666-6666-666666666666', NULL, NULL, 1,
        '2024-01-01T00:00:00', N'{}', NULL, 0x06, NULL, 5, N'boom', '2024-01-02T00:00:00', '2024-01-03T00:00:00'
    );
END;
GO
-- Asserts the DeadLetterIds left, as a list such as '2,3'. A NoTransaction test makes no
-- permanent objects, so it compares values, not tables.
CREATE PROCEDURE Replay_DeadLetter_trxTests.AssertLettersLeft
    @Expected VARCHAR(100)
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CONVERT(VARCHAR(20), d.DeadLetterId), ',') WITHIN GROUP (ORDER BY d.DeadLetterId), ''
        )
    FROM dbo.DeadLetter AS d;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = N'dead letters left';
END;
GO
-- Asserts how many messages each queue holds, as 'FIFO,strict,LIFO,pending,transport'.
CREATE PROCEDURE Replay_DeadLetter_trxTests.AssertQueued
    @Expected VARCHAR(100)
AS
BEGIN
    DECLARE @Actual VARCHAR(100);
    SELECT
        @Actual = CONCAT(
            (SELECT COUNT(*) FROM dbo.FifoQueue), ',',
            (SELECT COUNT(*) FROM dbo.StrictFifoQueue), ',',
            (SELECT COUNT(*) FROM dbo.LifoStack), ',',
            (SELECT COUNT(*) FROM dbo.PendingQueue), ',',
            (SELECT COUNT(*) FROM dbo.TransportMessage)
        );
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = N'messages queued';
END;
GO
-- Replays a letter and asserts that it succeeded and committed.
CREATE PROCEDURE Replay_DeadLetter_trxTests.Replay
    @DeadLetterId BIGINT
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC @RetCode = dbo.Replay_DeadLetter_trx @DeadLetterId = @DeadLetterId;
    SET @TranCount = @@TRANCOUNT;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
END;
GO
-- Replays a letter, asserts the error it raised and rolls back what a refusal may leave open.
CREATE PROCEDURE Replay_DeadLetter_trxTests.AssertRefused
    @DeadLetterId BIGINT,
    @Expected INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    BEGIN TRY
        EXEC dbo.Replay_DeadLetter_trx @DeadLetterId = @DeadLetterId;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @ErrorNumber, @Message = @Case;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Replay_DeadLetter_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Replay_DeadLetter_trx @DeadLetterId = 1;
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx sends the payload back to its queue and deletes the letter when it is a FIFO letter]
AS
BEGIN
    DECLARE @Payload VARBINARY(MAX);
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 1;

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '2,3,4,5,6';
    EXEC Replay_DeadLetter_trxTests.AssertQueued @Expected = '1,0,0,0,0';
    SELECT @Payload = q.Payload FROM dbo.FifoQueue AS q;
    EXEC tSQLt.AssertEquals @Expected = 0x01, @Actual = @Payload, @Message = N'the payload';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx sends each letter to the queue of its kind when letters of every kind are replayed]
AS
BEGIN
    DECLARE @Payloads VARCHAR(100);
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 2;
    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 3;
    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 4;
    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 5;

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,6';
    EXEC Replay_DeadLetter_trxTests.AssertQueued @Expected = '0,1,1,1,1';
    SELECT
        @Payloads = CONCAT(
            (SELECT CONVERT(VARCHAR(10), q.Payload, 1) FROM dbo.StrictFifoQueue AS q), ',',
            (SELECT CONVERT(VARCHAR(10), q.Payload, 1) FROM dbo.LifoStack AS q), ',',
            (SELECT CONVERT(VARCHAR(10), q.Payload, 1) FROM dbo.PendingQueue AS q), ',',
            (SELECT CONVERT(VARCHAR(10), m.Body, 1) FROM dbo.TransportMessage AS m)
        );
    EXEC tSQLt.AssertEqualsString @Expected = '0x02,0x03,0x04,0x05', @Actual = @Payloads, @Message = N'payloads';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx makes a pending message due at once when its DueAt has long passed]
AS
BEGIN
    DECLARE @Before DATETIME2(7) = SYSUTCDATETIME();
    DECLARE @DueAt DATETIME2(7);
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 4;

    SELECT @DueAt = q.DueAt FROM dbo.PendingQueue AS q;
    IF (@DueAt IS NULL OR @DueAt < @Before OR @DueAt > SYSUTCDATETIME())
        EXEC tSQLt.Fail @Message0 = N'the replayed message must be due at the time of the replay';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx keeps the transport columns of the message when it replays a transport letter]
AS
BEGIN
    DECLARE @Actual NVARCHAR(4000);
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 5;

    SELECT
        @Actual = CONCAT(
            m.Queue, '|', CONVERT(VARCHAR(36), m.Id), '|', m.CorrelationId, '|', m.ReplyToAddress, '|',
            m.Recoverable, '|', CONVERT(VARCHAR(19), m.Expires, 126), '|', m.Headers
        )
    FROM dbo.TransportMessage AS m;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Sales|55555555-5555-5555-5555-555555555555|order-7|Sales.Replies|0|2099-01-01T00:00:00|{"tenant":"a"}',
        @Actual = @Actual;
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx raises 735716 and sends nothing more when the letter was replayed already]
AS
BEGIN
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;
    EXEC Replay_DeadLetter_trxTests.Replay @DeadLetterId = 1;

    EXEC Replay_DeadLetter_trxTests.AssertRefused
        @DeadLetterId = 1, @Expected = 735716, @Case = N'the second replay of a letter';

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '2,3,4,5,6';
    EXEC Replay_DeadLetter_trxTests.AssertQueued @Expected = '1,0,0,0,0';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx raises 735716 and changes nothing when no letter has the key]
AS
BEGIN
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.AssertRefused @DeadLetterId = 99, @Expected = 735716, @Case = N'an unknown key';

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,2,3,4,5,6';
    EXEC Replay_DeadLetter_trxTests.AssertQueued @Expected = '0,0,0,0,0';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx raises 735707 and keeps the letter when its transport message has expired]
AS
BEGIN
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.AssertRefused
        @DeadLetterId = 6, @Expected = 735707, @Case = N'Send_TransportMessage_utx refuses an expired message';

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,2,3,4,5,6';
    EXEC Replay_DeadLetter_trxTests.AssertQueued @Expected = '0,0,0,0,0';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx raises 735707 and keeps the letter when its transport queue is gone]
AS
BEGIN
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;
    DELETE FROM dbo.TransportQueue;

    EXEC Replay_DeadLetter_trxTests.AssertRefused
        @DeadLetterId = 5, @Expected = 735707, @Case = N'Send_TransportMessage_utx refuses an unknown queue';

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,2,3,4,5,6';
    EXEC Replay_DeadLetter_trxTests.AssertQueued @Expected = '0,0,0,0,0';
END;
GO
--[@tSQLt:NoTransaction]('Replay_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Replay_DeadLetter_trxTests.[test Replay_DeadLetter_trx raises 735707 and changes nothing when DeadLetterId is NULL]
AS
BEGIN
    EXEC Replay_DeadLetter_trxTests.FakeTables;
    EXEC Replay_DeadLetter_trxTests.AddLetters;

    EXEC Replay_DeadLetter_trxTests.AssertRefused @DeadLetterId = NULL, @Expected = 735707, @Case = N'a NULL key';

    EXEC Replay_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,2,3,4,5,6';
END;
GO

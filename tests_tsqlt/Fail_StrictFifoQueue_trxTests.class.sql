SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Fail_StrictFifoQueue_trxTests';
GO
-- dbo.Fail_StrictFifoQueue_trx owns its transaction, so its tests but the first run as NoTransaction tests
-- (tSQLt puts the faked tables back after each); they assert the tables, not the result
-- set, which INSERT ... EXEC could only capture inside the transaction a _trx refuses.
-- The message table, the counts, the dead letters and the settings, faked: no
-- maxDeliveries row means its default, 5. DeadLetter keeps its identity, which the
-- procedure reads back (SCOPE_IDENTITY).
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.FakeTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.StrictFifoQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.MessageFailure';
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter', @Identity = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- Two messages, Ids 1 and 2. Faked without @Identity, Id takes explicit values.
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.AddMessages
AS
BEGIN
    INSERT INTO dbo.StrictFifoQueue (Id, Payload, EnqueuedAt)
    VALUES
    (1, 0x01, '2024-01-01T00:00:01'),
    (2, 0x02, '2024-01-01T00:00:02');
END;
GO
-- Message @MessageKey has failed @Failures times already, the first on 2 January 2024.
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.AddFailures
    @MessageKey BIGINT,
    @Failures INT,
    @Error NVARCHAR(MAX),
    @Kind VARCHAR(30) = 'StrictFifoQueue'
AS
BEGIN
    INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
    VALUES (@Kind, @MessageKey, @Failures, @Error, '2024-01-02T00:00:00', '2024-01-02T00:05:00');
END;
GO
-- Asserts what is queued (keys), counted (Kind:MessageKey:Failures:Error) and dead-lettered
-- (Kind:MessageKey:DeliveryCount:Error:Payload and the kind's own columns), each as a
-- sorted list. A NoTransaction test makes no permanent objects, so it compares values.
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.AssertState
    @Queued VARCHAR(100),
    @Failures NVARCHAR(4000),
    @Letters NVARCHAR(4000)
AS
BEGIN
    DECLARE @Actual NVARCHAR(MAX);
    SELECT @Actual = ISNULL(STRING_AGG(CONVERT(VARCHAR(20), q.Id), ',') WITHIN GROUP (ORDER BY q.Id), '')
    FROM dbo.StrictFifoQueue AS q;
    EXEC tSQLt.AssertEqualsString @Expected = @Queued, @Actual = @Actual, @Message = N'queued';
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CONCAT(f.Kind, ':', f.MessageKey, ':', f.Failures, ':', f.Error), ',') WITHIN GROUP (
                ORDER BY f.Kind, f.MessageKey
            ),
            ''
        )
    FROM dbo.MessageFailure AS f;
    EXEC tSQLt.AssertEqualsString @Expected = @Failures, @Actual = @Actual, @Message = N'counted';
    SELECT
        @Actual = ISNULL(
            STRING_AGG(
                CONCAT(
                    d.Kind, ':', d.MessageKey, ':', d.DeliveryCount, ':', d.Error, ':',
                    CONVERT(VARCHAR(20), d.Payload, 1), ':', CONVERT(VARCHAR(19), d.EnqueuedAt, 126)
                ),
                ','
            ) WITHIN GROUP (ORDER BY d.DeadLetterId),
            ''
        )
    FROM dbo.DeadLetter AS d;
    EXEC tSQLt.AssertEqualsString @Expected = @Letters, @Actual = @Actual, @Message = N'dead letters';
END;
GO
-- Calls the procedure with the arguments given and asserts the error it raised; it rolls
-- back what a refusal may leave open.
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.AssertRefused
    @Id BIGINT,
    @Error NVARCHAR(MAX),
    @Expected INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    BEGIN TRY
        EXEC dbo.Fail_StrictFifoQueue_trx @Id = @Id, @Error = @Error;
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
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: the consumer's, not yet rolled back,
-- which the failure would be undone with.
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'timeout';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx counts a first failure and keeps its error when the message has none]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'timeout';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '1,2',
        @Failures = N'StrictFifoQueue:1:1:timeout',
        @Letters = N'';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx adds one and keeps the last error when the message failed before]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @FirstFailedAt DATETIME2(7);
    DECLARE @Expected DATETIME2(7) = '2024-01-02T00:00:00';
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    EXEC Fail_StrictFifoQueue_trxTests.AddFailures @MessageKey = 1, @Failures = 2, @Error = N'first';

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'third';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '1,2',
        @Failures = N'StrictFifoQueue:1:3:third',
        @Letters = N'';
    SELECT @FirstFailedAt = f.FirstFailedAt FROM dbo.MessageFailure AS f;
    EXEC tSQLt.AssertEquals
        @Expected = @Expected, @Actual = @FirstFailedAt, @Message = N'the first failure stays';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx leaves the message queued when a fourth failure stays below the default 5]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    EXEC Fail_StrictFifoQueue_trxTests.AddFailures @MessageKey = 1, @Failures = 3, @Error = N'earlier';

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'fourth';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '1,2',
        @Failures = N'StrictFifoQueue:1:4:fourth',
        @Letters = N'';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx moves the message to DeadLetter when a fifth failure reaches the default 5]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    EXEC Fail_StrictFifoQueue_trxTests.AddFailures @MessageKey = 1, @Failures = 4, @Error = N'earlier';

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'fifth';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '2',
        @Failures = N'',
        @Letters = N'StrictFifoQueue:1:5:fifth:0x01:2024-01-01T00:00:01';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx moves the message with its count and first failure when maxDeliveries is 3]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @FirstFailedAt DATETIME2(7);
    DECLARE @DeadLetteredAt DATETIME2(7);
    DECLARE @Expected DATETIME2(7) = '2024-01-02T00:00:00';
    DECLARE @Before DATETIME2(7) = SYSUTCDATETIME();
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    INSERT INTO dbo.AppSettings (Param, ValInt) VALUES ('strictfifoqueue.maxDeliveries', 3);
    EXEC Fail_StrictFifoQueue_trxTests.AddFailures @MessageKey = 1, @Failures = 2, @Error = N'second';

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'third';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '2',
        @Failures = N'',
        @Letters = N'StrictFifoQueue:1:3:third:0x01:2024-01-01T00:00:01';
    SELECT
        @FirstFailedAt = d.FirstFailedAt,
        @DeadLetteredAt = d.DeadLetteredAt
    FROM dbo.DeadLetter AS d;
    EXEC tSQLt.AssertEquals
        @Expected = @Expected, @Actual = @FirstFailedAt, @Message = N'the first failure';
    IF (@DeadLetteredAt IS NULL OR @DeadLetteredAt < @Before)
        EXEC tSQLt.Fail @Message0 = N'DeadLetteredAt must be the time of the move';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx moves the message at its first failure when maxDeliveries is below 1]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    INSERT INTO dbo.AppSettings (Param, ValInt) VALUES ('strictfifoqueue.maxDeliveries', 0);

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'poison';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '2',
        @Failures = N'',
        @Letters = N'StrictFifoQueue:1:1:poison:0x01:2024-01-01T00:00:01';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx raises 735715 and counts nothing when the message is not queued]
AS
BEGIN
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;

    -- Id 3 was never sent (or another consumer has received it since).
    EXEC Fail_StrictFifoQueue_trxTests.AssertRefused
        @Id = 3,
        @Error = N'timeout',
        @Expected = 735715,
        @Case = N'an Id the queue does not hold';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '1,2',
        @Failures = N'',
        @Letters = N'';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx raises 735707 and counts nothing when Id or Error is NULL]
AS
BEGIN
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;

    EXEC Fail_StrictFifoQueue_trxTests.AssertRefused
        @Id = NULL,
        @Error = N'timeout',
        @Expected = 735707,
        @Case = N'a NULL Id';
    EXEC Fail_StrictFifoQueue_trxTests.AssertRefused
        @Id = 1,
        @Error = NULL,
        @Expected = 735707,
        @Case = N'a NULL Error';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '1,2',
        @Failures = N'',
        @Letters = N'';
END;
GO
--[@tSQLt:NoTransaction]('Fail_StrictFifoQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fail_StrictFifoQueue_trxTests.[test Fail_StrictFifoQueue_trx leaves the count of another kind alone when it has the same key]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Fail_StrictFifoQueue_trxTests.FakeTables;
    EXEC Fail_StrictFifoQueue_trxTests.AddMessages;
    EXEC Fail_StrictFifoQueue_trxTests.AddFailures @MessageKey = 1, @Failures = 4, @Error = N'other', @Kind = 'FifoQueue';

    EXEC @RetCode = dbo.Fail_StrictFifoQueue_trx @Id = 1, @Error = N'timeout';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Fail_StrictFifoQueue_trxTests.AssertState
        @Queued = '1,2',
        @Failures = N'FifoQueue:1:4:other,StrictFifoQueue:1:1:timeout',
        @Letters = N'';
END;
GO

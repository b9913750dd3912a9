SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_PendingQueue_utxTests';
GO
-- The queue faked with its identity (Id still counts up) and its EnqueuedAt default.
CREATE PROCEDURE Send_PendingQueue_utxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.PendingQueue', @Identity = 1, @Defaults = 1;
END;
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_PendingQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Payload is VARBINARY(MAX), which tSQLt.AssertEquals (SQL_VARIANT) cannot take: compare it in a WHERE.
CREATE PROCEDURE Send_PendingQueue_utxTests.[test Send_PendingQueue_utx writes the message due at the given time when one is given]
AS
BEGIN
    DECLARE @DueAt DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Id BIGINT;
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RowCount INT;
    DECLARE @Matching INT;
    DECLARE @RowDueAt DATETIME2(7);
    DECLARE @EnqueuedAt DATETIME2(7);
    EXEC Send_PendingQueue_utxTests.FakeQueue;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Send_PendingQueue_utx @Payload = 0x0A0B0C, @DueAt = @DueAt, @Id = @Id OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    IF @Id IS NULL EXEC tSQLt.Fail @Message0 = N'@Id was not returned';
    SELECT @RowCount = COUNT(*) FROM dbo.PendingQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @RowCount, @Message = N'rows in the queue';
    SELECT
        @Matching = COUNT(*),
        @RowDueAt = MAX(q.DueAt),
        @EnqueuedAt = MAX(q.EnqueuedAt)
    FROM dbo.PendingQueue AS q
    WHERE q.Id = @Id AND q.Payload = 0x0A0B0C;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching, @Message = N'a row with @Id and the payload';
    EXEC tSQLt.AssertEquals @Expected = @DueAt, @Actual = @RowDueAt, @Message = N'DueAt';
    IF @EnqueuedAt IS NULL OR @EnqueuedAt < @Before OR @EnqueuedAt > @After
        EXEC tSQLt.Fail @Message0 = N'EnqueuedAt must be the time of the send';
END;
GO
CREATE PROCEDURE Send_PendingQueue_utxTests.[test Send_PendingQueue_utx makes the message due now when the due time is NULL]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Id BIGINT;
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @DueAt DATETIME2(7);
    EXEC Send_PendingQueue_utxTests.FakeQueue;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Send_PendingQueue_utx @Payload = 0x01, @DueAt = NULL, @Id = @Id OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @DueAt = q.DueAt FROM dbo.PendingQueue AS q
    WHERE q.Id = @Id;
    IF @DueAt IS NULL OR @DueAt < @Before OR @DueAt > @After
        EXEC tSQLt.Fail @Message0 = N'DueAt must be the time of the send';
END;
GO
CREATE PROCEDURE Send_PendingQueue_utxTests.[test Send_PendingQueue_utx returns increasing Ids when called twice]
AS
BEGIN
    DECLARE @FirstId BIGINT;
    DECLARE @SecondId BIGINT;
    EXEC Send_PendingQueue_utxTests.FakeQueue;

    EXEC dbo.Send_PendingQueue_utx @Payload = 0x01, @Id = @FirstId OUTPUT;
    EXEC dbo.Send_PendingQueue_utx @Payload = 0x02, @Id = @SecondId OUTPUT;

    IF @FirstId IS NULL OR @SecondId IS NULL OR @SecondId <= @FirstId
        EXEC tSQLt.Fail @Message0 = N'the second send must return a larger Id than the first';
    SELECT q.Id INTO #Actual FROM dbo.PendingQueue AS q;
    SELECT TOP (0) a.Id INTO #Expected FROM #Actual AS a;
    INSERT INTO #Expected (Id) VALUES (@FirstId), (@SecondId);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- Caught here rather than with tSQLt.ExpectException, to assert afterwards that nothing was written.
CREATE PROCEDURE Send_PendingQueue_utxTests.[test Send_PendingQueue_utx raises 735707 and writes nothing when the payload is NULL]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Id BIGINT;
    EXEC Send_PendingQueue_utxTests.FakeQueue;

    BEGIN TRY
        EXEC dbo.Send_PendingQueue_utx @Payload = NULL, @Id = @Id OUTPUT;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = N'error number';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.PendingQueue';
END;
GO
--[@tSQLt:NoTransaction]('Send_PendingQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_PendingQueue_utxTests.[test Send_PendingQueue_utx raises 735702 when no transaction is open]
AS
BEGIN
    DECLARE @Id BIGINT;
    EXEC Send_PendingQueue_utxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Send_PendingQueue_utx @Payload = 0x01, @Id = @Id OUTPUT;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_FifoQueue_utxTests';
GO
-- Faked with @Identity = 1 and @Defaults = 1: the send relies on the Id identity and the
-- EnqueuedAt default.
CREATE PROCEDURE Send_FifoQueue_utxTests.[test Send_FifoQueue_utx writes the message and returns its Id when given a payload]
AS
BEGIN
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Id BIGINT;
    DECLARE @Rows INT;
    DECLARE @RowId BIGINT;
    DECLARE @EnqueuedAt DATETIME2(7);
    EXEC tSQLt.FakeTable @TableName = N'dbo.FifoQueue', @Identity = 1, @Defaults = 1;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Send_FifoQueue_utx
        @Payload = 0xC0FFEE,
        @Id = @Id OUTPUT;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Rows = COUNT(*) FROM dbo.FifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'messages in the queue';
    SELECT
        @RowId = q.Id,
        @EnqueuedAt = q.EnqueuedAt
    FROM dbo.FifoQueue AS q
    WHERE q.Payload = 0xC0FFEE;
    IF @Id IS NULL EXEC tSQLt.Fail @Message0 = N'@Id was not returned';
    EXEC tSQLt.AssertEquals @Expected = @RowId, @Actual = @Id, @Message = N'@Id is the new row''s Id';
    IF @EnqueuedAt IS NULL OR @EnqueuedAt < @Before OR @EnqueuedAt > @After
        EXEC tSQLt.Fail @Message0 = N'the message must be enqueued now (EnqueuedAt between the call''s start and end)';
END;
GO
CREATE PROCEDURE Send_FifoQueue_utxTests.[test Send_FifoQueue_utx hands out a larger Id when called a second time]
AS
BEGIN
    DECLARE @FirstId BIGINT;
    DECLARE @SecondId BIGINT;
    DECLARE @Rows INT;
    DECLARE @SecondRowId BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.FifoQueue', @Identity = 1, @Defaults = 1;

    EXEC dbo.Send_FifoQueue_utx @Payload = 0x01, @Id = @FirstId OUTPUT;
    EXEC dbo.Send_FifoQueue_utx @Payload = 0x02, @Id = @SecondId OUTPUT;

    IF @FirstId IS NULL OR @SecondId IS NULL OR @SecondId <= @FirstId
        EXEC tSQLt.Fail @Message0 = N'the second message must get a larger Id than the first';
    SELECT @Rows = COUNT(*) FROM dbo.FifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'messages in the queue';
    SELECT @SecondRowId = q.Id FROM dbo.FifoQueue AS q
    WHERE q.Payload = 0x02;
    EXEC tSQLt.AssertEquals @Expected = @SecondRowId, @Actual = @SecondId, @Message = N'second @Id';
END;
GO
-- Caught here rather than with ExpectException, to assert afterwards that nothing was written.
CREATE PROCEDURE Send_FifoQueue_utxTests.[test Send_FifoQueue_utx raises 735707 and writes nothing when Payload is NULL]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.FifoQueue', @Identity = 1, @Defaults = 1;

    BEGIN TRY
        EXEC dbo.Send_FifoQueue_utx @Payload = NULL;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Payload is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.FifoQueue';
END;
GO
-- Run after each NoTransaction test: a procedure that raised an error inside
-- tSQLt's TRY...CATCH may leave a transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_FifoQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- A NoTransaction test makes no permanent objects, so it counts rows instead of comparing tables.
--[@tSQLt:NoTransaction]('Send_FifoQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_FifoQueue_utxTests.[test Send_FifoQueue_utx raises 735702 and writes nothing when called outside a transaction]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.FifoQueue', @Identity = 1, @Defaults = 1;

    BEGIN TRY
        EXEC dbo.Send_FifoQueue_utx @Payload = 0xC0FFEE;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735702, @Actual = @ErrorNumber;
    SELECT @Rows = COUNT(*) FROM dbo.FifoQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'messages in the queue';
END;
GO

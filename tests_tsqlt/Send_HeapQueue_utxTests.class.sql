SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_HeapQueue_utxTests';
GO
-- Faked with @Defaults = 1: the send relies on the EnqueuedAt default.
CREATE PROCEDURE Send_HeapQueue_utxTests.[test Send_HeapQueue_utx writes the message stamped now when given a payload]
AS
BEGIN
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    EXEC tSQLt.FakeTable @TableName = N'dbo.HeapQueue', @Defaults = 1;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Send_HeapQueue_utx @Payload = 0xC0FFEE;
    SET @After = SYSUTCDATETIME();

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Rows = COUNT(*) FROM dbo.HeapQueue;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'messages in the queue';
    SELECT @EnqueuedAt = q.EnqueuedAt
    FROM dbo.HeapQueue AS q
    WHERE q.Payload = 0xC0FFEE;
    IF @EnqueuedAt IS NULL OR @EnqueuedAt < @Before OR @EnqueuedAt > @After
        EXEC tSQLt.Fail @Message0 = N'the message must be enqueued now (EnqueuedAt between the call''s start and end)';
END;
GO
-- Caught here rather than with ExpectException, to assert afterwards that nothing was written.
CREATE PROCEDURE Send_HeapQueue_utxTests.[test Send_HeapQueue_utx raises 735707 and writes nothing when Payload is NULL]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC tSQLt.FakeTable @TableName = N'dbo.HeapQueue', @Defaults = 1;

    BEGIN TRY
        EXEC dbo.Send_HeapQueue_utx @Payload = NULL;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Payload is required%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.HeapQueue';
END;
GO
-- Run after each NoTransaction test: a procedure that raised an error inside
-- tSQLt's TRY...CATCH may leave a transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_HeapQueue_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- A NoTransaction test makes no permanent objects, so it counts rows instead of comparing tables.
--[@tSQLt:NoTransaction]('Send_HeapQueue_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_HeapQueue_utxTests.[test Send_HeapQueue_utx raises 735702 and writes nothing when called outside a transaction]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.HeapQueue', @Defaults = 1;

    BEGIN TRY
        EXEC dbo.Send_HeapQueue_utx @Payload = 0xC0FFEE;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735702, @Actual = @ErrorNumber;
    SELECT @Rows = COUNT(*) FROM dbo.HeapQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'messages in the queue';
END;
GO

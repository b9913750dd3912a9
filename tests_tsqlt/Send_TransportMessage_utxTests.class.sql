SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Send_TransportMessage_utxTests';
GO
-- One declared queue, Sales, and an empty message table whose RowVersion still
-- increments (@Identity) and whose defaults still apply (@Defaults).
CREATE PROCEDURE Send_TransportMessage_utxTests.FakeTransport
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportQueue';
    INSERT INTO dbo.TransportQueue (Queue, Endpoint, Machine) VALUES ('Sales', 'Sales', NULL);
    EXEC tSQLt.FakeTable @TableName = N'dbo.TransportMessage', @Identity = 1, @Defaults = 1;
END;
GO
-- Run after the NoTransaction test.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Send_TransportMessage_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Sends with one bad argument and asserts that it raised 735707.
CREATE PROCEDURE Send_TransportMessage_utxTests.AssertRefused
    @Queue VARCHAR(400) = 'Sales',
    @Expires DATETIME2(7) = NULL,
    @Headers NVARCHAR(MAX) = N'{}',
    @CorrelationId VARCHAR(400) = NULL,
    @ReplyToAddress VARCHAR(400) = NULL,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @MessageId UNIQUEIDENTIFIER;
    BEGIN TRY
        EXEC dbo.Send_TransportMessage_utx
            @Queue = @Queue,
            @Expires = @Expires,
            @Headers = @Headers,
            @CorrelationId = @CorrelationId,
            @ReplyToAddress = @ReplyToAddress,
            @Body = 0x01,
            @MessageId = @MessageId OUTPUT;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx writes the message as given when every argument is given]
AS
BEGIN
    DECLARE @Id UNIQUEIDENTIFIER = NEWID();
    DECLARE @Expires DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Headers NVARCHAR(MAX) = N'{"type":"OrderPlaced","attempt":1}';
    DECLARE @RetCode INT;
    DECLARE @MessageId UNIQUEIDENTIFIER;
    DECLARE @Rows INT;
    DECLARE @RowQueue VARCHAR(255);
    DECLARE @RowId UNIQUEIDENTIFIER;
    DECLARE @RowCorrelationId VARCHAR(255);
    DECLARE @RowReplyToAddress VARCHAR(255);
    DECLARE @RowRecoverable INT;
    DECLARE @RowExpires DATETIME2(7);
    DECLARE @RowHeaders NVARCHAR(MAX);
    DECLARE @RowBody VARCHAR(MAX);
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC @RetCode = dbo.Send_TransportMessage_utx
        @Queue = 'Sales',
        @Id = @Id,
        @CorrelationId = 'conversation-1',
        @ReplyToAddress = 'Billing.Web01',
        @Recoverable = 0,
        @Expires = @Expires,
        @Headers = @Headers,
        @Body = 0x0102FF,
        @MessageId = @MessageId OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = @Id, @Actual = @MessageId, @Message = N'@MessageId';
    SELECT @Rows = COUNT(*) FROM dbo.TransportMessage;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'rows';
    SELECT
        @RowQueue = m.Queue,
        @RowId = m.Id,
        @RowCorrelationId = m.CorrelationId,
        @RowReplyToAddress = m.ReplyToAddress,
        @RowRecoverable = CAST(m.Recoverable AS INT),
        @RowExpires = m.Expires,
        @RowHeaders = m.Headers,
        @RowBody = CONVERT(VARCHAR(MAX), m.Body, 1)
    FROM dbo.TransportMessage AS m;
    EXEC tSQLt.AssertEqualsString @Expected = 'Sales', @Actual = @RowQueue, @Message = N'Queue';
    EXEC tSQLt.AssertEquals @Expected = @Id, @Actual = @RowId, @Message = N'Id';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'conversation-1', @Actual = @RowCorrelationId, @Message = N'CorrelationId';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Billing.Web01', @Actual = @RowReplyToAddress, @Message = N'ReplyToAddress';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RowRecoverable, @Message = N'Recoverable';
    EXEC tSQLt.AssertEquals @Expected = @Expires, @Actual = @RowExpires, @Message = N'Expires';
    EXEC tSQLt.AssertEqualsString @Expected = @Headers, @Actual = @RowHeaders, @Message = N'Headers';
    EXEC tSQLt.AssertEqualsString @Expected = '0x0102FF', @Actual = @RowBody, @Message = N'Body';
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx writes a new Id and the defaults when only the queue is given]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @MessageId UNIQUEIDENTIFIER;
    DECLARE @Rows INT;
    DECLARE @Matching INT;
    DECLARE @RowHeaders NVARCHAR(MAX);
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC @RetCode = dbo.Send_TransportMessage_utx
        @Queue = 'Sales',
        @MessageId = @MessageId OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    IF @MessageId IS NULL
        EXEC tSQLt.Fail @Message0 = N'@MessageId must return the new id';
    SELECT @Rows = COUNT(*) FROM dbo.TransportMessage;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'rows';
    SELECT @Matching = COUNT(*)
    FROM dbo.TransportMessage AS m
    WHERE
        m.Queue = 'Sales'
        AND m.Id = @MessageId
        AND m.CorrelationId IS NULL
        AND m.ReplyToAddress IS NULL
        AND m.Recoverable = 1
        AND m.Expires IS NULL
        AND m.Body IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching, @Message = N'the row carries the new id and no options';
    SELECT @RowHeaders = m.Headers FROM dbo.TransportMessage AS m;
    EXEC tSQLt.AssertEqualsString @Expected = N'{}', @Actual = @RowHeaders, @Message = N'Headers';
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx gives each message a higher RowVersion when sent in turn]
AS
BEGIN
    DECLARE @FirstId UNIQUEIDENTIFIER = NEWID();
    DECLARE @SecondId UNIQUEIDENTIFIER = NEWID();
    DECLARE @FirstRowVersion BIGINT;
    DECLARE @SecondRowVersion BIGINT;
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC dbo.Send_TransportMessage_utx @Queue = 'Sales', @Id = @FirstId;
    EXEC dbo.Send_TransportMessage_utx @Queue = 'Sales', @Id = @SecondId;

    SELECT @FirstRowVersion = m.[RowVersion] FROM dbo.TransportMessage AS m
    WHERE m.Id = @FirstId;
    SELECT @SecondRowVersion = m.[RowVersion] FROM dbo.TransportMessage AS m
    WHERE m.Id = @SecondId;
    IF @FirstRowVersion IS NULL OR @SecondRowVersion IS NULL OR @SecondRowVersion <= @FirstRowVersion
        EXEC tSQLt.Fail @Message0 = N'the later message must have the higher RowVersion';
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx accepts the headers when the object starts after a newline and a tab]
AS
BEGIN
    DECLARE @Headers NVARCHAR(MAX) = NCHAR(10) + NCHAR(9) + N'{"kind":"order"}';
    DECLARE @RetCode INT;
    DECLARE @Written INT;
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC @RetCode = dbo.Send_TransportMessage_utx @Queue = 'Sales', @Headers = @Headers;

    SET @Written = (
        SELECT COUNT(*) FROM dbo.TransportMessage AS m
        WHERE m.Headers = @Headers
    );
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Written;
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx raises 735707 and writes nothing when the queue is unknown]
AS
BEGIN
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC Send_TransportMessage_utxTests.AssertRefused @Queue = 'Shipping', @Case = N'undeclared queue';
    EXEC Send_TransportMessage_utxTests.AssertRefused
        @Queue = 'Sales.Web01', @Case = N'undeclared secondary of a declared endpoint';
    EXEC Send_TransportMessage_utxTests.AssertRefused @Queue = NULL, @Case = N'NULL queue';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.TransportMessage';
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx raises 735707 and writes nothing when Expires has passed]
AS
BEGIN
    DECLARE @Passed DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC Send_TransportMessage_utxTests.AssertRefused @Expires = @Passed, @Case = N'expired five minutes ago';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.TransportMessage';
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx raises 735707 and writes nothing when the headers are no JSON object]
AS
BEGIN
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC Send_TransportMessage_utxTests.AssertRefused @Headers = N'[1]', @Case = N'a JSON array';
    EXEC Send_TransportMessage_utxTests.AssertRefused @Headers = N'not json', @Case = N'not JSON';
    EXEC Send_TransportMessage_utxTests.AssertRefused @Headers = N'', @Case = N'empty';
    EXEC Send_TransportMessage_utxTests.AssertRefused @Headers = NULL, @Case = N'NULL';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.TransportMessage';
END;
GO
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx raises 735707 and writes nothing when an address is over 255 characters]
AS
BEGIN
    DECLARE @Long VARCHAR(400) = REPLICATE('a', 256);
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    EXEC Send_TransportMessage_utxTests.AssertRefused @CorrelationId = @Long, @Case = N'CorrelationId';
    EXEC Send_TransportMessage_utxTests.AssertRefused @ReplyToAddress = @Long, @Case = N'ReplyToAddress';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.TransportMessage';
END;
GO
--[@tSQLt:NoTransaction]('Send_TransportMessage_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Send_TransportMessage_utxTests.[test Send_TransportMessage_utx raises 735702 and writes nothing when no transaction is open]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @MessageId UNIQUEIDENTIFIER;
    DECLARE @Rows INT;
    EXEC Send_TransportMessage_utxTests.FakeTransport;

    BEGIN TRY
        EXEC dbo.Send_TransportMessage_utx
            @Queue = 'Sales',
            @MessageId = @MessageId OUTPUT;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735702, @Actual = @ErrorNumber;
    SELECT @Rows = COUNT(*) FROM dbo.TransportMessage;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Rows, @Message = N'rows written';
END;
GO

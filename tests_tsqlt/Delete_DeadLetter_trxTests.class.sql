SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Delete_DeadLetter_trxTests';
GO
-- dbo.Delete_DeadLetter_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked table back after each).
-- Three dead letters, DeadLetterIds 1 to 3.
CREATE PROCEDURE Delete_DeadLetter_trxTests.AddLetters
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter';
    INSERT INTO dbo.DeadLetter (DeadLetterId, Kind, MessageKey, Payload, DeliveryCount, Error, FirstFailedAt)
    VALUES
    (1, 'FifoQueue', 11, 0x01, 5, N'boom', '2024-01-02T00:00:00'),
    (2, 'LifoStack', 12, 0x02, 5, N'boom', '2024-01-02T00:00:00'),
    (3, 'FifoQueue', 13, 0x03, 5, N'boom', '2024-01-02T00:00:00');
END;
GO
-- Asserts the DeadLetterIds left, as a list such as '2,3'. A NoTransaction test makes no
-- permanent objects, so it compares values, not tables.
CREATE PROCEDURE Delete_DeadLetter_trxTests.AssertLettersLeft
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
-- Deletes a letter, asserts the error it raised and rolls back what a refusal may leave open.
CREATE PROCEDURE Delete_DeadLetter_trxTests.AssertRefused
    @DeadLetterId BIGINT,
    @Expected INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    BEGIN TRY
        EXEC dbo.Delete_DeadLetter_trx @DeadLetterId = @DeadLetterId;
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
CREATE PROCEDURE Delete_DeadLetter_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Delete_DeadLetter_trxTests.[test Delete_DeadLetter_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Delete_DeadLetter_trxTests.AddLetters;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Delete_DeadLetter_trx @DeadLetterId = 1;
END;
GO
--[@tSQLt:NoTransaction]('Delete_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Delete_DeadLetter_trxTests.[test Delete_DeadLetter_trx deletes that letter and no other when the key exists]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC Delete_DeadLetter_trxTests.AddLetters;

    EXEC @RetCode = dbo.Delete_DeadLetter_trx @DeadLetterId = 2;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC Delete_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,3';
END;
GO
--[@tSQLt:NoTransaction]('Delete_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Delete_DeadLetter_trxTests.[test Delete_DeadLetter_trx raises 735716 when the letter was deleted already]
AS
BEGIN
    DECLARE @RetCode INT;
    EXEC Delete_DeadLetter_trxTests.AddLetters;
    EXEC @RetCode = dbo.Delete_DeadLetter_trx @DeadLetterId = 2;

    EXEC Delete_DeadLetter_trxTests.AssertRefused
        @DeadLetterId = 2, @Expected = 735716, @Case = N'the second delete of a letter';

    EXEC Delete_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,3';
END;
GO
--[@tSQLt:NoTransaction]('Delete_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Delete_DeadLetter_trxTests.[test Delete_DeadLetter_trx raises 735716 and deletes nothing when no letter has the key]
AS
BEGIN
    EXEC Delete_DeadLetter_trxTests.AddLetters;

    EXEC Delete_DeadLetter_trxTests.AssertRefused @DeadLetterId = 99, @Expected = 735716, @Case = N'an unknown key';

    EXEC Delete_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,2,3';
END;
GO
--[@tSQLt:NoTransaction]('Delete_DeadLetter_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Delete_DeadLetter_trxTests.[test Delete_DeadLetter_trx raises 735707 and deletes nothing when DeadLetterId is NULL]
AS
BEGIN
    EXEC Delete_DeadLetter_trxTests.AddLetters;

    EXEC Delete_DeadLetter_trxTests.AssertRefused @DeadLetterId = NULL, @Expected = 735707, @Case = N'a NULL key';

    EXEC Delete_DeadLetter_trxTests.AssertLettersLeft @Expected = '1,2,3';
END;
GO

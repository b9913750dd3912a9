SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Delete_DeadLetter_trx: deletes a dead letter from dbo.DeadLetter for good: the
   operator has decided that its message is not to be delivered. A letter that another
   operator replayed or deleted first is gone: the call is refused (735716) rather than
   taken as done, so that each of them learns who acted; a replay under way holds the
   letter, and this waits for it.
   @DeadLetterId: the letter's key, as dbo.DeadLetter_V shows it; required. Keys are an
     identity and never reused, so the key is also the token of the letter the operator saw.
   Returns 0; 1 on error: 735701 inside a transaction, 735707 a NULL @DeadLetterId, 735716
   the letter is gone. */
CREATE OR ALTER PROCEDURE dbo.Delete_DeadLetter_trx
    @DeadLetterId BIGINT
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Delete_DeadLetter_trx';
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @DeadLetterId);
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Delete_DeadLetter_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@DeadLetterId IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@DeadLetterId is required: the key dbo.DeadLetter_V shows');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Delete_DeadLetter;
    DELETE FROM dbo.DeadLetter
    WHERE DeadLetterId = @DeadLetterId;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            RAISERROR (735716, 16, 1, @Proc, @Key);
            GOTO EXIT_TRANSACTION;
        END;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Delete_DeadLetter;

    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Delete_DeadLetter;

    EXIT_ERROR:
    RETURN 1;
END;
GO

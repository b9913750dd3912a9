SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Purge_TransportMessage_trx: deletes expired transport messages, in short
   transactions of at most @BatchSize rows each, until none is left, so that
   purging never holds many locks or blocks receivers for long; READPAST skips
   rows a receiver holds (they are purged next time). The failure counts of the messages
   it deletes (dbo.MessageFailure) go in the same transaction, after them, in the order a
   receive takes them, read WITH (FORCESEEK) on their key so as not to wait for the counts
   of messages that receivers hold.
   @BatchSize: rows per transaction, 1 to 4000 (default 1000): below SQL
     Server's lock-escalation threshold of 5,000 locks on one table or index.
   Returns 0 with one row, how many messages it deleted (Purged); 1 on error:
   735701 inside a transaction, 735707 a bad @BatchSize. */
CREATE OR ALTER PROCEDURE dbo.Purge_TransportMessage_trx
    @BatchSize INT = 1000
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Purge_TransportMessage_trx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Purged INT = 0;
    DECLARE @Batch INT;
    DECLARE @Deleted TABLE (
        [RowVersion] BIGINT NOT NULL
    );
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Purge_TransportMessage_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 4000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 4000');
            GOTO EXIT_ERROR;
        END;

    SET @Batch = @BatchSize;
    WHILE (@Batch = @BatchSize)
        BEGIN
            BEGIN TRANSACTION Purge_TransportMessage;
            DELETE FROM @Deleted;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            DELETE TOP (@BatchSize) FROM dbo.TransportMessage WITH (ROWLOCK, READPAST, READCOMMITTEDLOCK)
            OUTPUT DELETED.[RowVersion]
            INTO @Deleted ([RowVersion])
            WHERE Expires <= @Now;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            SET @Batch = @RowCnt;
            SET @Purged = @Purged + @RowCnt;
            IF (@Batch > 0)
                BEGIN
                    DELETE f
                    FROM @Deleted AS d
                    INNER JOIN dbo.MessageFailure AS f WITH (FORCESEEK)
                        ON f.Kind = 'TransportMessage' AND f.MessageKey = d.[RowVersion];
                    SELECT
                        @RowCnt = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                END;
            COMMIT TRANSACTION Purge_TransportMessage;
        END;

    SELECT @Purged AS Purged;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Purge_TransportMessage;

    EXIT_ERROR:
    RETURN 1;
END;
GO

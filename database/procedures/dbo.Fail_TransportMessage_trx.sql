SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Fail_TransportMessage_trx: records that a consumer failed on a message of dbo.TransportMessage, in a transaction
   of its own, and moves the message to dbo.DeadLetter when that makes 'transportmessage.maxDeliveries'
   failures (dbo.AppSettingInt_fn, default 5; below 1 counts as 1), so that it stops coming
   back. A consumer of dbo.Receive_TransportMessage_utx calls it in its CATCH, after its ROLLBACK
   (docs/message-queues.md, Dead letters): the rollback undoes every write of its
   transaction back to the outermost BEGIN TRANSACTION, the receive's included, and SQL
   Server has no autonomous transactions
   (https://learn.microsoft.com/sql/t-sql/language-elements/rollback-work-transact-sql),
   so a failure can only be written after it, by a transaction of its own.
   The message is read WITH (UPDLOCK) before its count (dbo.MessageFailure), in the order
   a receive takes them; the update lock is held to the end of the transaction
   (https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table), so receives
   pass over the message meanwhile (READPAST) or wait for it (strict FIFO). If another
   consumer holds it now, this waits until that one commits (then 735715: it was
   delivered, nothing to count) or rolls back (then this failure counts, and that one's
   too when it calls this).
   Limits: a consumer that dies before it calls this (killed, its connection lost) is not
   counted: its delivery comes back as if it had never happened. Between a rollback and
   this call another consumer may receive the message again, so a message can be
   delivered more often than the maximum, at most once more per other consumer.
   @Queue: the message's transport queue; required.
   @RowVersion: the message's RowVersion, as the receive returned it; required (its Id is the
     sender's, and need not be unique).
   @Error: why the consumer failed, kept with the count and in the dead letter; required.
   Returns 0 with one row: Failures (the failed deliveries recorded, this one included)
   and DeadLetterId (the dead letter's key when this failure moved the message, else
   NULL); 1 on error: 735701 inside a transaction, 735703, 735707 a NULL @Queue, @RowVersion or @Error,
   735715 the message is not in the queue (another consumer has received it
   since, or the RowVersion is wrong). */
CREATE OR ALTER PROCEDURE dbo.Fail_TransportMessage_trx
    @Queue VARCHAR(400),
    @RowVersion BIGINT,
    @Error NVARCHAR(MAX)
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Fail_TransportMessage_trx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @MaxDeliveries INT = dbo.AppSettingInt_fn('transportmessage.maxDeliveries');
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @RowVersion);
    DECLARE @Where NVARCHAR(300);
    DECLARE @Queued INT;
    DECLARE @Failures INT;
    DECLARE @FirstFailedAt DATETIME2(7);
    DECLARE @DeadLetterId BIGINT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open. Inside the
    -- consumer's own transaction it would also be undone by the consumer's rollback.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Fail_TransportMessage_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Queue IS NULL OR @RowVersion IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Queue and @RowVersion are required: the ones the receive returned');
            GOTO EXIT_ERROR;
        END;
    IF (@Error IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Error is required: why the consumer failed');
            GOTO EXIT_ERROR;
        END;
    IF (@MaxDeliveries IS NULL OR @MaxDeliveries < 1) SET @MaxDeliveries = 1;
    SET @Where = N'transport queue ' + @Queue;

    BEGIN TRANSACTION Fail_TransportMessage;
    SELECT @Queued = COUNT(*)
    FROM dbo.TransportMessage AS q WITH (UPDLOCK, ROWLOCK)
    WHERE q.Queue = @Queue AND q.[RowVersion] = @RowVersion;
    IF (@Queued = 0)
        BEGIN
            RAISERROR (735715, 16, 1, @Proc, @Key, @Where);
            GOTO EXIT_TRANSACTION;
        END;

    UPDATE dbo.MessageFailure
    SET
        Failures = Failures + 1,
        Error = @Error,
        LastFailedAt = @Now
    WHERE Kind = 'TransportMessage' AND MessageKey = @RowVersion;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
            VALUES ('TransportMessage', @RowVersion, 1, @Error, @Now, @Now);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_TRANSACTION;
                END;
        END;
    SELECT
        @Failures = f.Failures,
        @FirstFailedAt = f.FirstFailedAt
    FROM dbo.MessageFailure AS f
    WHERE f.Kind = 'TransportMessage' AND f.MessageKey = @RowVersion;

    IF (@Failures >= @MaxDeliveries)
        BEGIN
            -- INSERT ... SELECT, then DELETE, under the lock taken above: a DELETE ... OUTPUT
            -- INTO cannot write a table with CHECK constraints
            -- (https://learn.microsoft.com/sql/t-sql/queries/output-clause-transact-sql).
            INSERT INTO dbo.DeadLetter (
                Kind, Queue, MessageKey, MessageId, CorrelationId, ReplyToAddress, Recoverable, Expires, Headers,
                Payload, DeliveryCount, Error, FirstFailedAt, DeadLetteredAt
            )
            SELECT
                'TransportMessage' AS Kind,
                q.Queue,
                q.[RowVersion],
                q.Id,
                q.CorrelationId,
                q.ReplyToAddress,
                q.Recoverable,
                q.Expires,
                q.Headers,
                q.Body,
                @Failures AS DeliveryCount,
                @Error AS Error,
                @FirstFailedAt AS FirstFailedAt,
                @Now AS DeadLetteredAt
            FROM dbo.TransportMessage AS q
            WHERE q.Queue = @Queue AND q.[RowVersion] = @RowVersion;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_TRANSACTION;
                END;
            SET @DeadLetterId = SCOPE_IDENTITY();

            DELETE FROM dbo.TransportMessage
            WHERE Queue = @Queue AND [RowVersion] = @RowVersion;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_TRANSACTION;
                END;

            DELETE FROM dbo.MessageFailure
            WHERE Kind = 'TransportMessage' AND MessageKey = @RowVersion;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_TRANSACTION;
                END;
        END;
    COMMIT TRANSACTION Fail_TransportMessage;

    SELECT
        @Failures AS Failures,
        @DeadLetterId AS DeadLetterId;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Fail_TransportMessage;

    EXIT_ERROR:
    RETURN 1;
END;
GO

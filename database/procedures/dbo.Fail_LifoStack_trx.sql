SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Fail_LifoStack_trx: records that a consumer failed on a message of dbo.LifoStack, in a transaction
   of its own, and moves the message to dbo.DeadLetter when that makes 'lifostack.maxDeliveries'
   failures (dbo.AppSettingInt_fn, default 5; below 1 counts as 1), so that it stops coming
   back. A consumer of dbo.Receive_LifoStack_utx calls it in its CATCH, after its ROLLBACK
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
   @Id: the message's Id, as the receive returned it; required.
   @Error: why the consumer failed, kept with the count and in the dead letter; required.
   Returns 0 with one row: Failures (the failed deliveries recorded, this one included)
   and DeadLetterId (the dead letter's key when this failure moved the message, else
   NULL); 1 on error: 735701 inside a transaction, 735703, 735707 a NULL @Id or @Error,
   735715 the message is not in the queue (another consumer has received it
   since, or the Id is wrong). */
CREATE OR ALTER PROCEDURE dbo.Fail_LifoStack_trx
    @Id BIGINT,
    @Error NVARCHAR(MAX)
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Fail_LifoStack_trx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @MaxDeliveries INT = dbo.AppSettingInt_fn('lifostack.maxDeliveries');
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @Id);
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
            RAISERROR (735701, 16, 1, N'dbo.Fail_LifoStack_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Id IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Id is required: the Id the receive returned');
            GOTO EXIT_ERROR;
        END;
    IF (@Error IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Error is required: why the consumer failed');
            GOTO EXIT_ERROR;
        END;
    IF (@MaxDeliveries IS NULL OR @MaxDeliveries < 1) SET @MaxDeliveries = 1;
    SET @Where = N'dbo.LifoStack';

    BEGIN TRANSACTION Fail_LifoStack;
    SELECT @Queued = COUNT(*)
    FROM dbo.LifoStack AS q WITH (UPDLOCK, ROWLOCK)
    WHERE q.Id = @Id;
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
    WHERE Kind = 'LifoStack' AND MessageKey = @Id;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            INSERT INTO dbo.MessageFailure (Kind, MessageKey, Failures, Error, FirstFailedAt, LastFailedAt)
            VALUES ('LifoStack', @Id, 1, @Error, @Now, @Now);
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
    WHERE f.Kind = 'LifoStack' AND f.MessageKey = @Id;

    IF (@Failures >= @MaxDeliveries)
        BEGIN
            -- INSERT ... SELECT, then DELETE, under the lock taken above: a DELETE ... OUTPUT
            -- INTO cannot write a table with CHECK constraints
            -- (https://learn.microsoft.com/sql/t-sql/queries/output-clause-transact-sql).
            INSERT INTO dbo.DeadLetter (
                Kind, MessageKey, Payload, EnqueuedAt, DeliveryCount, Error, FirstFailedAt, DeadLetteredAt
            )
            SELECT
                'LifoStack' AS Kind,
                q.Id,
                q.Payload,
                q.EnqueuedAt,
                @Failures AS DeliveryCount,
                @Error AS Error,
                @FirstFailedAt AS FirstFailedAt,
                @Now AS DeadLetteredAt
            FROM dbo.LifoStack AS q
            WHERE q.Id = @Id;
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

            DELETE FROM dbo.LifoStack
            WHERE Id = @Id;
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
            WHERE Kind = 'LifoStack' AND MessageKey = @Id;
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
    COMMIT TRANSACTION Fail_LifoStack;

    SELECT
        @Failures AS Failures,
        @DeadLetterId AS DeadLetterId;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Fail_LifoStack;

    EXIT_ERROR:
    RETURN 1;
END;
GO

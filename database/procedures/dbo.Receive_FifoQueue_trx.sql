SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Receive_FifoQueue_trx: receives up to @BatchSize messages from dbo.FifoQueue and
   commits at once: at-most-once delivery (seed 002's mode without a transaction): a
   message is gone before the caller works on it, and a caller that fails loses it. Use
   dbo.Receive_FifoQueue_utx inside your own transaction for at-least-once. Order:
   oldest first, skipping rows other consumers hold (READPAST).
   It deletes the messages' failure counts too (dbo.MessageFailure: failures that consumers
   of dbo.Receive_FifoQueue_utx recorded); DeliveryCount is 1 on a first delivery, one more
   than the failures recorded on a redelivery.
   @BatchSize: how many messages at most, 1 to 1000 (default 1).
   Returns 0 with one row per message (Id, Payload, EnqueuedAt, DeliveryCount), none when
   the queue is empty; 1 on error: 735701 inside a transaction, 735707 a bad @BatchSize. */
CREATE OR ALTER PROCEDURE dbo.Receive_FifoQueue_trx
    @BatchSize INT = 1
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- READPAST needs READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Receive_FifoQueue_trx';
    DECLARE @Received TABLE (
        Id BIGINT NOT NULL,
        Payload VARBINARY(MAX) NOT NULL,
        EnqueuedAt DATETIME2(7) NOT NULL
    );
    DECLARE @Counted TABLE (
        MessageKey BIGINT NOT NULL,
        Failures INT NOT NULL
    );
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Receive_FifoQueue_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1000');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Receive_FifoQueue;
    WITH oldest AS (
        SELECT TOP (@BatchSize)
            q.Id,
            q.Payload,
            q.EnqueuedAt
        FROM dbo.FifoQueue AS q WITH (ROWLOCK, READPAST, READCOMMITTEDLOCK)
        ORDER BY q.Id
    )

    DELETE FROM oldest
    OUTPUT
        DELETED.Id,
        DELETED.Payload,
        DELETED.EnqueuedAt
    INTO @Received (Id, Payload, EnqueuedAt);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt > 0)
        BEGIN
            DELETE f
            OUTPUT
                DELETED.MessageKey,
                DELETED.Failures
            INTO @Counted (MessageKey, Failures)
            FROM @Received AS r
            INNER JOIN dbo.MessageFailure AS f WITH (FORCESEEK)
                ON f.Kind = 'FifoQueue' AND f.MessageKey = r.Id;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Receive_FifoQueue;

    SELECT
        r.Id,
        r.Payload,
        r.EnqueuedAt,
        ISNULL(c.Failures, 0) + 1 AS DeliveryCount
    FROM @Received AS r
    LEFT JOIN @Counted AS c ON r.Id = c.MessageKey
    ORDER BY r.Id;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Receive_FifoQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

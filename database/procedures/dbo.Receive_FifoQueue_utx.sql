SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Receive_FifoQueue_utx: receives up to @BatchSize messages from dbo.FifoQueue
   inside the caller's transaction, oldest first, skipping rows other consumers hold
   (READPAST). A receive is a delete that returns the rows it deleted (DELETE ...
   OUTPUT), so two consumers never get the same message; if the caller rolls back, the
   messages are back in the queue (at-least-once, when the caller commits after its
   work).
   A consumer that failed calls dbo.Fail_FifoQueue_trx after its rollback: past
   'fifoqueue.maxDeliveries' failures (default 5) the message moves to dbo.DeadLetter
   instead of coming back. The receive deletes the messages' failure counts
   (dbo.MessageFailure, rows only for messages that failed before, read WITH (FORCESEEK) on
   its key: a scan, which the optimizer may choose for a small table, would wait for the
   rows other consumers' open receives hold) in the caller's transaction: gone with the
   messages when it commits, back with them when it rolls back. DeliveryCount is 1 on a
   first delivery, one more than the failures recorded on a redelivery. The rows are
   returned by a SELECT from a table variable, so a T-SQL caller can capture them with
   INSERT ... EXEC, which takes the rows an execute_statement returns with SELECT
   (https://learn.microsoft.com/sql/t-sql/statements/insert-transact-sql).
   @BatchSize: how many messages at most, 1 to 1000 (default 1).
   Returns 0 with one row per message (Id, Payload, EnqueuedAt, DeliveryCount), none when
   the queue is empty; 1 on error: 735702 outside a transaction, 735707 a bad @BatchSize. */
CREATE OR ALTER PROCEDURE dbo.Receive_FifoQueue_utx
    @BatchSize INT = 1
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Receive_FifoQueue_utx';
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

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Receive_FifoQueue_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1000');
            GOTO EXIT_ERROR;
        END;

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
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
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
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
        END;

    SELECT
        r.Id,
        r.Payload,
        r.EnqueuedAt,
        ISNULL(c.Failures, 0) + 1 AS DeliveryCount
    FROM @Received AS r
    LEFT JOIN @Counted AS c ON r.Id = c.MessageKey
    ORDER BY r.Id;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

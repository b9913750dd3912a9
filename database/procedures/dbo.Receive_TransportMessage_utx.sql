SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Receive_TransportMessage_utx: receives up to @BatchSize messages from a
   transport queue inside the caller's transaction (seed 002's native
   transaction mode): the oldest unexpired ones, skipping rows other consumers
   hold (READPAST). If the caller rolls back, the messages are back in the
   queue; expired ones are never delivered.
   A consumer that failed calls dbo.Fail_TransportMessage_trx after its rollback: past
   'transportmessage.maxDeliveries' failures (default 5) the message moves to dbo.DeadLetter
   instead of coming back. The receive deletes the messages' failure counts
   (dbo.MessageFailure, rows only for messages that failed before, read WITH (FORCESEEK) on
   its key: a scan, which the optimizer may choose for a small table, would wait for the
   rows other consumers' open receives hold) in the caller's transaction: gone with the
   messages when it commits, back with them when it rolls back. DeliveryCount is 1 on a
   first delivery, one more than the failures recorded on a redelivery. The rows are
   returned by a SELECT from a table variable, so a T-SQL caller can capture them with
   INSERT ... EXEC, which takes the rows an execute_statement returns with SELECT
   (https://learn.microsoft.com/sql/t-sql/statements/insert-transact-sql).
   @Queue: the queue's address.
   @BatchSize: how many messages at most, 1 to 1000 (default 1).
   Returns 0 with one row per message (Id, CorrelationId, ReplyToAddress, Recoverable,
   Expires, Headers, Body, RowVersion, DeliveryCount), none when nothing is deliverable;
   1 on error: 735702 outside a transaction, 735707 an unknown queue or a bad @BatchSize. */
CREATE OR ALTER PROCEDURE dbo.Receive_TransportMessage_utx
    @Queue VARCHAR(400),
    @BatchSize INT = 1
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Receive_TransportMessage_utx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Received TABLE (
        Id UNIQUEIDENTIFIER NOT NULL,
        CorrelationId VARCHAR(255) NULL,
        ReplyToAddress VARCHAR(255) NULL,
        Recoverable BIT NOT NULL,
        Expires DATETIME2(7) NULL,
        Headers NVARCHAR(MAX) NOT NULL,
        Body VARBINARY(MAX) NULL,
        [RowVersion] BIGINT NOT NULL
    );
    DECLARE @Counted TABLE (
        MessageKey BIGINT NOT NULL,
        Failures INT NOT NULL
    );
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Receive_TransportMessage_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@Queue IS NULL OR NOT EXISTS (
        SELECT 1 FROM dbo.TransportQueue AS q
        WHERE q.Queue = @Queue
    ))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Queue names no declared transport queue (dbo.Add_TransportQueue_trx)');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1000');
            GOTO EXIT_ERROR;
        END;

    WITH oldest AS (
        SELECT TOP (@BatchSize)
            m.Id,
            m.CorrelationId,
            m.ReplyToAddress,
            m.Recoverable,
            m.Expires,
            m.Headers,
            m.Body,
            m.[RowVersion]
        FROM dbo.TransportMessage AS m WITH (ROWLOCK, READPAST, READCOMMITTEDLOCK)
        WHERE m.Queue = @Queue AND (m.Expires IS NULL OR m.Expires > @Now)
        ORDER BY m.[RowVersion]
    )

    DELETE FROM oldest
    OUTPUT
        DELETED.Id,
        DELETED.CorrelationId,
        DELETED.ReplyToAddress,
        DELETED.Recoverable,
        DELETED.Expires,
        DELETED.Headers,
        DELETED.Body,
        DELETED.[RowVersion]
    INTO @Received (Id, CorrelationId, ReplyToAddress, Recoverable, Expires, Headers, Body, [RowVersion]);
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
                ON f.Kind = 'TransportMessage' AND f.MessageKey = r.[RowVersion];
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
        END;

    SELECT
        r.Id,
        r.CorrelationId,
        r.ReplyToAddress,
        r.Recoverable,
        r.Expires,
        r.Headers,
        r.Body,
        r.[RowVersion],
        ISNULL(c.Failures, 0) + 1 AS DeliveryCount
    FROM @Received AS r
    LEFT JOIN @Counted AS c ON r.[RowVersion] = c.MessageKey
    ORDER BY r.[RowVersion];
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

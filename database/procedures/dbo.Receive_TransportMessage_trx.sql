SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Receive_TransportMessage_trx: receives up to @BatchSize messages from a
   transport queue and commits at once: seed 002's mode without a transaction,
   at-most-once delivery (a caller that fails after this returns has lost the
   messages). Use dbo.Receive_TransportMessage_utx in your own transaction for
   at-least-once.
   It deletes the messages' failure counts too (dbo.MessageFailure: failures that consumers
   of dbo.Receive_TransportMessage_utx recorded); DeliveryCount is 1 on a first delivery,
   one more than the failures recorded on a redelivery.
   @Queue: the queue's address.
   @BatchSize: how many messages at most, 1 to 1000 (default 1).
   Returns 0 with one row per message, oldest first (Id, CorrelationId, ReplyToAddress,
   Recoverable, Expires, Headers, Body, RowVersion, DeliveryCount), none when nothing is
   deliverable; 1 on error: 735701 inside a transaction, 735707 an unknown queue or a bad
   @BatchSize. */
CREATE OR ALTER PROCEDURE dbo.Receive_TransportMessage_trx
    @Queue VARCHAR(400),
    @BatchSize INT = 1
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- READPAST needs READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Receive_TransportMessage_trx';
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

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Receive_TransportMessage_trx');
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

    BEGIN TRANSACTION Receive_TransportMessage;
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
                ON f.Kind = 'TransportMessage' AND f.MessageKey = r.[RowVersion];
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Receive_TransportMessage;

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

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Receive_TransportMessage;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Seal_QueueBatch_trx: closes a batch to new items, in a transaction of its own.
   From now on an Add_ with its @BatchID is refused (735724), and the batch's callback is
   enqueued when its last item reaches a final state. A batch none of whose items is left
   to finish (none joined, or all finished before the seal) gets its callback here, in
   this transaction. The seal's UPDATE holds the row's exclusive lock to its commit, so an
   item's final report waiting on the row counts after it, against the sealed batch, and
   one of the two enqueues the callback: the seal if nothing was left when it ran, the
   report otherwise (dbo.Count_QueueBatch_utx says why once).
   @BatchID: the batch.
   Returns 0 with the batch's row of dbo.QueueBatch_V; 1 on error: 735701 inside a
   transaction, 735707 no @BatchID, 735723 no such batch, 735724 sealed already, and the
   errors of dbo.Callback_QueueBatch_utx. */
CREATE OR ALTER PROCEDURE dbo.Seal_QueueBatch_trx
    @BatchID INT
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Seal_QueueBatch_trx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Sealed TABLE (FinishedAt DATETIME2(7) NULL);
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Seal_QueueBatch_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchID IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchID is required');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Seal_QueueBatch;
    UPDATE b
    SET
        b.SealedAt = @Now,
        b.FinishedAt = CASE
            WHEN b.Total = b.Completed + b.PartiallyCompleted + b.Failed + b.Cancelled + b.Terminated THEN @Now
        END
    OUTPUT INSERTED.FinishedAt
    INTO @Sealed (FinishedAt)
    FROM dbo.QueueBatch AS b WITH (ROWLOCK, READCOMMITTEDLOCK)
    WHERE b.BatchID = @BatchID AND b.SealedAt IS NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            IF
                EXISTS (
                    SELECT 1 FROM dbo.QueueBatch AS b
                    WHERE b.BatchID = @BatchID
                )
                BEGIN
                    RAISERROR (735724, 16, 1, @Proc, @BatchID);
                    GOTO EXIT_TRANSACTION;
                END;
            RAISERROR (735723, 16, 1, @Proc, @BatchID);
            GOTO EXIT_TRANSACTION;
        END;
    IF
        EXISTS (
            SELECT 1 FROM @Sealed AS s
            WHERE s.FinishedAt IS NOT NULL
        )
        BEGIN
            EXEC @RetCode = dbo.Callback_QueueBatch_utx
                @BatchID = @BatchID,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Seal_QueueBatch;

    SELECT
        v.BatchID,
        v.[Name],
        v.[State],
        v.Total,
        v.Remaining,
        v.SealedAt,
        v.FinishedAt,
        v.CallbackEnqueuedAt
    FROM dbo.QueueBatch_V AS v
    WHERE v.BatchID = @BatchID;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Seal_QueueBatch;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Count_QueueBatch_utx: counts batched items that reached a final state (or left
   Failed by a Retry), inside the transaction of that move, and enqueues the callback
   of each sealed batch that has no item left to finish: exactly once.
   Why once: each batch's row is changed by one UPDATE that adds the counts and, when
   the batch is sealed, has no FinishedAt yet and its counts reach its Total, sets
   FinishedAt in the same statement. The UPDATE takes the row's exclusive lock and
   holds it to the end of the transaction, so two workers finishing a batch's last two
   items at once are serialized on that row: the second UPDATE waits for the first
   transaction to commit (or roll back) and then reads the row as committed, its
   FinishedAt set; only the transaction whose UPDATE changed FinishedAt from NULL
   enqueues the callback (dbo.Callback_QueueBatch_utx), before it commits. A rollback
   takes the count, FinishedAt and the callback back together. READCOMMITTEDLOCK makes
   the UPDATE read by locks under READ_COMMITTED_SNAPSHOT as well ("Lock modes" and
   "Lock compatibility",
   https://learn.microsoft.com/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide;
   READCOMMITTEDLOCK, https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table).
   Batches are counted one at a time in BatchID order, so two calls that count the same
   batches lock them in one order.
   The cost: every final report of a batch's items takes that one row's lock briefly (an
   UPDATE of a few integers, then its commit), so a batch's final reports are
   serialized among themselves, whatever the queue's workers; items of other batches
   and unbatched items never wait on it.
   @Counts: per batch and state, how many items entered (or, negative, left) it; the
     states are the final ones: Completed, PartiallyCompleted, Failed, Cancelled,
     Terminated.
   @Caller: the procedure that moved the items, named in the errors.
   Returns 0; 1 on error: 735702 outside a transaction, 735707 a state that is not
   final, 735723 no such batch (its row was deleted before its items), a count out of
   range (547: the CHECK of dbo.QueueBatch), and the errors of
   dbo.Callback_QueueBatch_utx. On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Count_QueueBatch_utx
    @Counts dbo.QueueBatchCountList READONLY,
    @Caller NVARCHAR(128)
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = ISNULL(@Caller, N'dbo.Count_QueueBatch_utx');
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @BatchID INT;
    DECLARE @Completed INT;
    DECLARE @PartiallyCompleted INT;
    DECLARE @Failed INT;
    DECLARE @Cancelled INT;
    DECLARE @Terminated INT;
    DECLARE @Changed TABLE (
        WasFinishedAt DATETIME2(7) NULL,
        FinishedAt DATETIME2(7) NULL
    );
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Count_QueueBatch_utx');
            GOTO EXIT_ERROR;
        END;
    IF
        EXISTS (
            SELECT 1 FROM @Counts AS c
            WHERE c.[Status] NOT IN ('Completed', 'PartiallyCompleted', 'Failed', 'Cancelled', 'Terminated')
        )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Counts: a batch counts the final states only');
            GOTO EXIT_ERROR;
        END;

    SELECT @BatchID = MIN(c.BatchID) FROM @Counts AS c;
    WHILE (@BatchID IS NOT NULL)
        BEGIN
            SELECT
                @Completed = SUM(CASE WHEN c.[Status] = 'Completed' THEN c.Items ELSE 0 END),
                @PartiallyCompleted = SUM(CASE WHEN c.[Status] = 'PartiallyCompleted' THEN c.Items ELSE 0 END),
                @Failed = SUM(CASE WHEN c.[Status] = 'Failed' THEN c.Items ELSE 0 END),
                @Cancelled = SUM(CASE WHEN c.[Status] = 'Cancelled' THEN c.Items ELSE 0 END),
                @Terminated = SUM(CASE WHEN c.[Status] = 'Terminated' THEN c.Items ELSE 0 END)
            FROM @Counts AS c
            WHERE c.BatchID = @BatchID;

            DELETE FROM @Changed;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            -- Every expression on the right reads the row as it was before this UPDATE.
            UPDATE b
            SET
                b.Completed = b.Completed + @Completed,
                b.PartiallyCompleted = b.PartiallyCompleted + @PartiallyCompleted,
                b.Failed = b.Failed + @Failed,
                b.Cancelled = b.Cancelled + @Cancelled,
                b.Terminated = b.Terminated + @Terminated,
                b.FinishedAt = CASE
                    WHEN
                        b.FinishedAt IS NULL
                        AND b.SealedAt IS NOT NULL
                        AND b.Total = b.Completed + b.PartiallyCompleted + b.Failed + b.Cancelled + b.Terminated
                        + @Completed + @PartiallyCompleted + @Failed + @Cancelled + @Terminated
                        THEN @Now
                    ELSE b.FinishedAt
                END
            OUTPUT
                DELETED.FinishedAt,
                INSERTED.FinishedAt
            INTO @Changed (WasFinishedAt, FinishedAt)
            FROM dbo.QueueBatch AS b WITH (ROWLOCK, READCOMMITTEDLOCK)
            WHERE b.BatchID = @BatchID;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt = 0)
                BEGIN
                    RAISERROR (735723, 16, 1, @Proc, @BatchID);
                    GOTO EXIT_ERROR;
                END;
            IF
                EXISTS (
                    SELECT 1 FROM @Changed AS x
                    WHERE x.WasFinishedAt IS NULL AND x.FinishedAt IS NOT NULL
                )
                BEGIN
                    EXEC @RetCode = dbo.Callback_QueueBatch_utx
                        @BatchID = @BatchID,
                        @Caller = @Proc;
                    SELECT @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
                END;
            SELECT @BatchID = MIN(c.BatchID) FROM @Counts AS c
            WHERE c.BatchID > @BatchID;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

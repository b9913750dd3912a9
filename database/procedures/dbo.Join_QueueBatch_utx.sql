SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Join_QueueBatch_utx: counts items an enqueue just inserted into an open batch,
   inside the caller's transaction (the Add_ procedures call it after their INSERT, so
   that the batch's count and its items commit or roll back together).
   The row's UPDATE holds its exclusive lock to the end of the transaction, so a final
   report of the same batch waits for the enqueue to commit and then counts against the
   new Total; an open batch never fires its callback, so nothing fires early meanwhile
   ("Lock modes",
   https://learn.microsoft.com/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide).
   @BatchID: the batch (dbo.QueueBatch).
   @Items: how many items joined (0 is allowed: a call whose items were all duplicates
     still finds out that its batch is open).
   @Caller: the procedure that enqueued, named in the errors.
   Returns 0; 1 on error: 735702 outside a transaction, 735707 a missing or negative
   argument, 735723 no such batch, 735724 the batch is sealed. On error the caller rolls
   back. */
CREATE OR ALTER PROCEDURE dbo.Join_QueueBatch_utx
    @BatchID INT,
    @Items INT,
    @Caller NVARCHAR(128)
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = ISNULL(@Caller, N'dbo.Join_QueueBatch_utx');
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Join_QueueBatch_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchID IS NULL OR @Items IS NULL OR @Items < 0)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchID and @Items (0 or more) are required');
            GOTO EXIT_ERROR;
        END;

    -- READCOMMITTEDLOCK: the row is found by its lock, not by a row version, under
    -- READ_COMMITTED_SNAPSHOT too.
    UPDATE b
    SET b.Total = b.Total + @Items
    FROM dbo.QueueBatch AS b WITH (ROWLOCK, READCOMMITTEDLOCK)
    WHERE b.BatchID = @BatchID AND b.SealedAt IS NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt = 0)
        BEGIN
            IF
                EXISTS (
                    SELECT 1 FROM dbo.QueueBatch AS b
                    WHERE b.BatchID = @BatchID
                )
                BEGIN
                    RAISERROR (735724, 16, 1, @Proc, @BatchID);
                    GOTO EXIT_ERROR;
                END;
            RAISERROR (735723, 16, 1, @Proc, @BatchID);
            GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

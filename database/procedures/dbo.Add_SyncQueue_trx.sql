SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_SyncQueue_trx: enqueues sync jobs in a transaction of its own; the
   rules are dbo.Add_SyncQueue_utx's. One job is a one-row @Items.
   @Items: the jobs (dbo.SyncQueueItemList).
   @BatchID: the open batch the inserted jobs join; NULL (the default): none.
   Returns 0 with one row per job, in ItemNo order (EnqueuedAt, Type,
   EntityKey, from dbo.SyncQueue, then ItemNo and IsDuplicate): a
   duplicate's row is the unfinished item that carries its DedupKey, with that
   item's key, Type and EntityKey; 1 on error: 735701 inside a transaction, and
   the errors of dbo.Add_SyncQueue_utx.
   The rows are read by key with FORCESEEK, so that the read touches only the
   call's own items: a scan, which the optimizer may choose for a small table,
   would wait for the uncommitted items of a producer whose transaction is open
   (https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table). */
CREATE OR ALTER PROCEDURE dbo.Add_SyncQueue_trx
    @Items dbo.SyncQueueItemList READONLY,
    @BatchID INT = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Add_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Add_SyncQueue;
    EXEC @RetCode = dbo.Add_SyncQueue_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT,
        @BatchID = @BatchID;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Add_SyncQueue;

    SELECT
        v.EnqueuedAt,
        v.[Type],
        v.EntityKey,
        e.ItemNo,
        e.IsDuplicate
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e
    INNER JOIN dbo.SyncQueue AS v WITH (FORCESEEK) ON e.EnqueuedAt = v.EnqueuedAt
    ORDER BY e.ItemNo;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Add_SyncQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

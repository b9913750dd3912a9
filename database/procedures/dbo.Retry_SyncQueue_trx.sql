SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Retry_SyncQueue_trx: retries a Failed SyncQueue item: it is Pending again
   with a fresh attempt budget, due at @ScheduledFor (default now), in a transaction
   of its own (dbo.Move_SyncQueue_utx, Action Retry, has the rules).
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read, checked when given; NULL: the item as it is now.
   @ScheduledFor: the new due time, UTC; NULL: now.
   Returns 0 with the item (EnqueuedAt, UpdatedAt, Status, ScheduledFor) from
   dbo.Worker_SyncQueue_V; 1 on error: 735701 inside a transaction, and the
   errors of dbo.Move_SyncQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Retry_SyncQueue_trx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp] = NULL,
    @ScheduledFor dbo.[_Timestamp] = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Retry_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Retry_SyncQueue;
    EXEC @RetCode = dbo.Move_SyncQueue_utx
        @EnqueuedAt = @EnqueuedAt,
        @UpdatedAt = @UpdatedAt,
        @ScheduledFor = @ScheduledFor,
        @Action = 'Retry';
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Retry_SyncQueue;

    SELECT
        v.EnqueuedAt,
        v.UpdatedAt,
        v.[Status],
        v.ScheduledFor
    FROM dbo.Worker_SyncQueue_V AS v
    WHERE v.EnqueuedAt = @EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Retry_SyncQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

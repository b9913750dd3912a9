SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Next_SyncQueue_trx: claims the next due SyncQueue item, the one-item
   form of dbo.Next_SyncQueue_Batch_trx, which does the work (one way to claim).
   @LockedBy: the worker slot claiming; NULL records HOST_NAME()/@@SPID.
   @WaitMs: how long to wait for a due item, 0 to 60000 ms (default 0).
   @Type: claim only items of this job type; NULL (the default): any.
   Returns 0 with one row (EnqueuedAt, UpdatedAt, LeaseUntil, AttemptNum), or no
   row when nothing is due; 1 on error: 735701 inside a transaction, and the
   errors of dbo.Next_SyncQueue_Batch_trx. */
CREATE OR ALTER PROCEDURE dbo.Next_SyncQueue_trx
    @LockedBy NVARCHAR(400) = NULL,
    @WaitMs INT = 0,
    @Type VARCHAR(400) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @RetCode INT;

    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Next_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;

    EXEC @RetCode = dbo.Next_SyncQueue_Batch_trx
        @LockedBy = @LockedBy,
        @BatchSize = 1,
        @WaitMs = @WaitMs,
        @Type = @Type;
    IF (@RetCode <> 0) GOTO EXIT_ERROR;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

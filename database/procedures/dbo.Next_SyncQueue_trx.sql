SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Next_SyncQueue_trx: claims the next due SyncQueue item in a transaction of its
   own (dbo.Next_SyncQueue_utx does the claiming) and returns its key and token.
   Returns 0 with one row (EnqueuedAt, UpdatedAt) from dbo.Worker_SyncQueue_V, or
   no row when nothing is due; 1 on error: 50001 inside a transaction, and the
   errors of dbo.Next_SyncQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Next_SyncQueue_trx
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (50001, 16, 1, N'dbo.Next_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Next_SyncQueue;
    EXEC @RetCode = dbo.Next_SyncQueue_utx
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @UpdatedAt = @UpdatedAt OUTPUT;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Next_SyncQueue;

    SELECT
        v.EnqueuedAt,
        v.UpdatedAt
    FROM dbo.Worker_SyncQueue_V AS v
    WHERE v.EnqueuedAt = @EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Next_SyncQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

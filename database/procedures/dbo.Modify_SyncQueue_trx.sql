SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Modify_SyncQueue_trx: a worker reports on a SyncQueue item, in a transaction of
   its own; the rules are dbo.Modify_SyncQueue_utx's.
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read with the item.
   @Status: the outcome.
   @Step: the step reached; NULL keeps the recorded one.
   @Response: the attempt's response; NULL keeps the recorded one.
   @Error: the attempt's error; NULL keeps the recorded one.
   @ScheduledFor: for an Error outcome, when to try again; NULL: after the backoff.
     For a release (Pending: a worker shutting down, or a handler's snooze), when it
     is due again; NULL: as it was.
   Returns 0 with the updated item from dbo.Worker_SyncQueue_V (its new UpdatedAt
   is the next token, LeaseUntil its lease while in Processing); 1 on error:
   735701 inside a transaction, and the errors of dbo.Modify_SyncQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Modify_SyncQueue_trx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp],
    @Status dbo.QueueState,
    @Step VARCHAR(400) = NULL,
    @Response dbo.WebResponse = NULL,
    @Error dbo.WebResponse = NULL,
    @ScheduledFor dbo.[_Timestamp] = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Modify_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Modify_SyncQueue;
    EXEC @RetCode = dbo.Modify_SyncQueue_utx
        @EnqueuedAt = @EnqueuedAt,
        @UpdatedAt = @UpdatedAt,
        @Status = @Status,
        @Step = @Step,
        @Response = @Response,
        @Error = @Error,
        @ScheduledFor = @ScheduledFor;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Modify_SyncQueue;

    SELECT
        v.EnqueuedAt,
        v.[Type],
        v.EntityKey,
        v.Payload,
        v.[Status],
        v.[Step],
        v.AttemptNum,
        v.ScheduledFor,
        v.StartedAt,
        v.UpdatedAt,
        v.LeaseUntil,
        v.Response,
        v.Error
    FROM dbo.Worker_SyncQueue_V AS v
    WHERE v.EnqueuedAt = @EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Modify_SyncQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

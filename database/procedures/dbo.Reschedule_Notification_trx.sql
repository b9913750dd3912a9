SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Reschedule_Notification_trx: moves the due time of a Pending, Error or Paused
   Notification item to @ScheduledFor, in a transaction of its own
   (dbo.Move_Notification_utx, Action Reschedule, has the rules).
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read, checked when given; NULL: the item as it is now.
   @ScheduledFor: the new due time, UTC (required).
   Returns 0 with the item (EnqueuedAt, UpdatedAt, Status, ScheduledFor) from
   dbo.Worker_Notification_V; 1 on error: 735701 inside a transaction, and the
   errors of dbo.Move_Notification_utx. */
CREATE OR ALTER PROCEDURE dbo.Reschedule_Notification_trx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp] = NULL,
    @ScheduledFor dbo.[_Timestamp]
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
            RAISERROR (735701, 16, 1, N'dbo.Reschedule_Notification_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Reschedule_Notification;
    EXEC @RetCode = dbo.Move_Notification_utx
        @EnqueuedAt = @EnqueuedAt,
        @UpdatedAt = @UpdatedAt,
        @ScheduledFor = @ScheduledFor,
        @Action = 'Reschedule';
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Reschedule_Notification;

    SELECT
        v.EnqueuedAt,
        v.UpdatedAt,
        v.[Status],
        v.ScheduledFor
    FROM dbo.Worker_Notification_V AS v
    WHERE v.EnqueuedAt = @EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Reschedule_Notification;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Modify_Notification_trx: a worker reports on a Notification item, in a transaction of
   its own; the rules are dbo.Modify_Notification_utx's.
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read with the item.
   @Status: the outcome.
   @Step: the step reached; NULL keeps the recorded one.
   @Response: the attempt's response; NULL keeps the recorded one.
   @Error: the attempt's error; NULL keeps the recorded one.
   @ScheduledFor: for an Error outcome, when to try again; NULL: after the backoff.
     For a release (Pending: a worker shutting down, or a handler's snooze), when it
     is due again; NULL: as it was.
   @EmailResponse, @EmailError: the Email channel's own result, when given.
   @SmsResponse, @SmsError: the Sms channel's own result, when given.
   Returns 0 with the updated item from dbo.Worker_Notification_V (its new UpdatedAt
   is the next token, LeaseUntil its lease while in Processing); 1 on error:
   735701 inside a transaction, and the errors of dbo.Modify_Notification_utx. */
CREATE OR ALTER PROCEDURE dbo.Modify_Notification_trx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp],
    @Status dbo.QueueState,
    @Step VARCHAR(400) = NULL,
    @Response dbo.WebResponse = NULL,
    @Error dbo.WebResponse = NULL,
    @ScheduledFor dbo.[_Timestamp] = NULL,
    @EmailResponse dbo.WebResponse = NULL,
    @EmailError dbo.WebResponse = NULL,
    @SmsResponse dbo.WebResponse = NULL,
    @SmsError dbo.WebResponse = NULL
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
            RAISERROR (735701, 16, 1, N'dbo.Modify_Notification_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Modify_Notification;
    EXEC @RetCode = dbo.Modify_Notification_utx
        @EnqueuedAt = @EnqueuedAt,
        @UpdatedAt = @UpdatedAt,
        @Status = @Status,
        @Step = @Step,
        @Response = @Response,
        @Error = @Error,
        @ScheduledFor = @ScheduledFor,
        @EmailResponse = @EmailResponse,
        @EmailError = @EmailError,
        @SmsResponse = @SmsResponse,
        @SmsError = @SmsError;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Modify_Notification;

    SELECT
        v.EnqueuedAt,
        v.[Type],
        v.[Status],
        v.[Step],
        v.AttemptNum,
        v.ScheduledFor,
        v.StartedAt,
        v.UpdatedAt,
        v.LeaseUntil,
        v.Response,
        v.Error,
        v.UserID,
        v.Username,
        v.OTP,
        v.EmailTo,
        v.PreferredLanguage,
        v.EmailResponse,
        v.EmailError,
        v.PhoneNumber,
        v.SmsResponse,
        v.SmsError
    FROM dbo.Worker_Notification_V AS v
    WHERE v.EnqueuedAt = @EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Modify_Notification;

    EXIT_ERROR:
    RETURN 1;
END;
GO

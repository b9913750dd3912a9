SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_Notification_ResetPassword_trx: enqueues a password-reset
   notification in a transaction of its own; the rules are
   dbo.Add_Notification_ResetPassword_utx's.
   @UserID: whose password.
   @Username: their login name.
   @OTP: the one-time code to send.
   @EmailTo: the address to e-mail it to, or NULL.
   @PreferredLanguage: the e-mail's language tag (default en).
   @PhoneNumber: the E.164 number to text it to, or NULL.
   @ScheduledFor: when it may be sent, UTC (default: now).
   @Priority: higher is claimed first (default 0).
   @GroupKey: an ordered group to join (NULL: none).
   @DedupKey: a deduplication key (NULL: none).
   Returns 0 with one row, the new key (EnqueuedAt), or the key of the
   unfinished notification that already carries @DedupKey; 1 on error: 735701 inside
   a transaction, and the errors of dbo.Add_Notification_ResetPassword_utx. */
CREATE OR ALTER PROCEDURE dbo.Add_Notification_ResetPassword_trx
    @UserID dbo.DbUserID,
    @Username NVARCHAR(400),
    @OTP VARCHAR(400),
    @EmailTo NVARCHAR(400) = NULL,
    @PreferredLanguage NVARCHAR(400) = NULL,
    @PhoneNumber VARCHAR(400) = NULL,
    @ScheduledFor dbo.[_Timestamp] = NULL,
    @Priority INT = 0,
    @GroupKey NVARCHAR(400) = NULL,
    @DedupKey NVARCHAR(400) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @EnqueuedAt dbo.[_Timestamp];
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Add_Notification_ResetPassword_trx');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Add_ResetPassword;
    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = @UserID,
        @Username = @Username,
        @OTP = @OTP,
        @EmailTo = @EmailTo,
        @PreferredLanguage = @PreferredLanguage,
        @PhoneNumber = @PhoneNumber,
        @ScheduledFor = @ScheduledFor,
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @Priority = @Priority,
        @GroupKey = @GroupKey,
        @DedupKey = @DedupKey;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Add_ResetPassword;

    SELECT @EnqueuedAt AS EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Add_ResetPassword;

    EXIT_ERROR:
    RETURN 1;
END;
GO

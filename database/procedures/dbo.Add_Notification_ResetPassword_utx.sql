SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_Notification_ResetPassword_utx: enqueues a password-reset
   notification inside the caller's transaction: the base row, its
   ResetPassword subtype row and one row per channel asked for, so that an
   application can commit its own writes and the notification together.
   It is dbo.Add_Notification_ResetPassword_Batch_utx for one item, after
   checking each parameter here so that a refusal names the parameter: the key
   (the later of now and the last key plus a microsecond, taken with no lock of
   its own, so that no lock outlives a call its client cancels), the
   deduplication and the ordered group are the batch's. @DedupKey is checked,
   and @GroupKey joined, under a lock of each held to the end of the
   transaction (dbo.Lock_ItemKeys_utx): only producers of the same DedupKey, or
   into the same ordered group, wait for each other, so a group's items are
   committed in key order.
   The text parameters are wider than their columns on purpose: SQL Server
   cuts an over-long argument silently, so each length is checked here instead.
   @UserID: whose password; a positive id.
   @Username: their login name, at most 128 characters.
   @OTP: the one-time code to send: 4 to 10 letters or digits.
   @EmailTo: the address to e-mail it to, or NULL for no e-mail.
   @PreferredLanguage: the e-mail's language tag (default en).
   @PhoneNumber: the E.164 number to text it to, or NULL for no SMS.
   @ScheduledFor: when it may be sent, UTC (default: now).
   @EnqueuedAt: OUTPUT, the new notification's key; for a duplicate, the key of
     the unfinished notification that already carries @DedupKey.
   @Priority: higher is claimed first, -32768 to 32767 (default and NULL: 0).
   @GroupKey: an ordered group to join, at most 100 characters (NULL: none).
   @DedupKey: a deduplication key, at most 200 characters (NULL: none). While an
     unfinished notification carries it, nothing is written and that one's key
     is returned, with no error: enqueueing the same request twice is safe.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735707 an invalid
   parameter (nothing is written), 735709 the DedupKey's or group's lock, or free
   keys, not found in 10 s; an error of an INSERT itself is re-raised as it came.
   On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Add_Notification_ResetPassword_utx
    @UserID dbo.DbUserID,
    @Username NVARCHAR(400),
    @OTP VARCHAR(400),
    @EmailTo NVARCHAR(400) = NULL,
    @PreferredLanguage NVARCHAR(400) = NULL,
    @PhoneNumber VARCHAR(400) = NULL,
    @ScheduledFor dbo.[_Timestamp] = NULL,
    @EnqueuedAt dbo.[_Timestamp] = NULL OUTPUT,
    @Priority INT = 0,
    @GroupKey NVARCHAR(400) = NULL,
    @DedupKey NVARCHAR(400) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Add_Notification_ResetPassword_utx';
    DECLARE @RetCode INT;
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SET @EnqueuedAt = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Add_Notification_ResetPassword_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@UserID IS NULL OR @UserID <= 0)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@UserID is required and must be positive');
            GOTO EXIT_ERROR;
        END;
    IF (@Username IS NULL OR LTRIM(RTRIM(@Username)) = N'' OR LEN(@Username) > 128)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Username is required, at most 128 characters');
            GOTO EXIT_ERROR;
        END;
    -- LEN and LIKE ignore trailing spaces of VARCHAR: DATALENGTH does not
    IF (
        @OTP IS NULL OR LEN(@OTP) NOT BETWEEN 4 AND 10 OR @OTP LIKE '%[^0-9A-Za-z]%'
        OR DATALENGTH(@OTP) <> DATALENGTH(RTRIM(@OTP))
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@OTP must be 4 to 10 letters or digits');
            GOTO EXIT_ERROR;
        END;
    IF (@EmailTo IS NULL AND @PhoneNumber IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'give @EmailTo, @PhoneNumber or both: a notification needs a channel');
            GOTO EXIT_ERROR;
        END;
    IF (@EmailTo IS NOT NULL AND dbo.EmailIsValid_fn(@EmailTo) = 0)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@EmailTo is not an e-mail address');
            GOTO EXIT_ERROR;
        END;
    IF (@PhoneNumber IS NOT NULL AND dbo.PhoneIsValid_fn(@PhoneNumber) = 0)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@PhoneNumber is not an E.164 number such as +14155550123');
            GOTO EXIT_ERROR;
        END;
    IF (
        @PreferredLanguage IS NOT NULL
        AND (LEN(@PreferredLanguage) NOT BETWEEN 2 AND 12 OR @PreferredLanguage LIKE N'%[^A-Za-z-]%')
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@PreferredLanguage must be a language tag such as en or en-GB');
            GOTO EXIT_ERROR;
        END;
    IF (@Priority NOT BETWEEN -32768 AND 32767)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Priority must be -32768 to 32767');
            GOTO EXIT_ERROR;
        END;
    IF (@GroupKey IS NOT NULL AND (LTRIM(RTRIM(@GroupKey)) = N'' OR LEN(@GroupKey) > 100))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@GroupKey must be 1 to 100 characters, or NULL');
            GOTO EXIT_ERROR;
        END;
    IF (@DedupKey IS NOT NULL AND (LTRIM(RTRIM(@DedupKey)) = N'' OR LEN(@DedupKey) > 200))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@DedupKey must be 1 to 200 characters, or NULL');
            GOTO EXIT_ERROR;
        END;

    -- The rest is the batch's, for one item: the DedupKey's and the group's locks, the
    -- duplicate check, the key and the rows. Its checks are these, so it refuses nothing
    -- this procedure has not already refused by name.
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, ScheduledFor, [Priority], GroupKey,
        DedupKey
    )
    VALUES (
        1, @UserID, @Username, @OTP, @EmailTo, @PreferredLanguage, @PhoneNumber, @ScheduledFor, @Priority, @GroupKey,
        @DedupKey
    );
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    EXEC @RetCode = dbo.Add_Notification_ResetPassword_Batch_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT;
    SELECT @ErrNo = @@ERROR;
    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
    SELECT @EnqueuedAt = j.EnqueuedAt
    FROM OPENJSON (@Enqueued) WITH (EnqueuedAt DATETIME2(7)) AS j;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

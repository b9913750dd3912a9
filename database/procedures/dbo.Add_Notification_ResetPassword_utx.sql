SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_Notification_ResetPassword_utx: enqueues a password-reset
   notification inside the caller's transaction: the base row, its
   ResetPassword subtype row and one row per channel asked for, so that an
   application can commit its own writes and the notification together.
   The key is the later of now and the last key plus a microsecond
   (dbo.QueueNextKey_fn), handed out under an exclusive application lock on
   'dbo.Notification' that the session holds only while it reads the last key
   and inserts the base row, never to the end of the caller's transaction, so
   concurrent producers never collide and none waits for another's open
   transaction. A statement that waits more than 5 s for a lock while the
   enqueue lock is held fails (1222). An error while the lock is held releases
   it and is re-raised as it came (THROW), which ends the caller's batch as
   well: the caller rolls back. A client that cancels the call (an attention)
   in that instant leaves the lock to its session until the session ends or is
   reset for reuse from a pool (dbo.Add_SyncQueue_utx's comment has the whole
   case).
   @DedupKey is checked, and @GroupKey joined, under a lock of each held to the
   end of the transaction (dbo.Lock_ItemKeys_utx): only producers of the same
   DedupKey, or into the same ordered group, wait for each other, so a group's
   items are committed in key order.
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
   parameter (nothing is written), 735709 the enqueue lock or the DedupKey's or
   group's lock was not granted in 10 s; an error of the INSERT itself is
   re-raised as it came.
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
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @LockResult INT;
    DECLARE @RetCode INT;
    DECLARE @ItemKeys dbo.ItemKeyList;
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

    -- The DedupKey and the ordered group, locked to the end of the transaction
    -- (dbo.Lock_ItemKeys_utx): the DedupKey is checked by one transaction at a time, and
    -- a group's items are enqueued by one, so they are committed in key order.
    INSERT INTO @ItemKeys (KeyColumn, ItemKey)
    SELECT
        k.KeyColumn,
        k.ItemKey
    FROM (VALUES ('DedupKey', @DedupKey), ('GroupKey', @GroupKey)) AS k(KeyColumn, ItemKey)
    WHERE k.ItemKey IS NOT NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt > 0)
        BEGIN
            EXEC @RetCode = dbo.Lock_ItemKeys_utx
                @Queue = N'dbo.Notification',
                @ItemKeys = @ItemKeys,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
        END;
    -- Under the DedupKey's lock, so two producers of the same key cannot both miss it.
    IF (@DedupKey IS NOT NULL)
        BEGIN
            SELECT @EnqueuedAt = n.EnqueuedAt
            FROM dbo.Notification AS n
            WHERE
                n.DedupKey = @DedupKey
                AND n.DedupKey IS NOT NULL
                AND n.[Status] IN ('Pending', 'Processing', 'Error', 'Paused');
            IF (@EnqueuedAt IS NOT NULL) RETURN 0;
        END;

    -- The enqueue lock is the session's, held from here to the INSERT's end and
    -- released below, or in the CATCH on an error (with XACT_ABORT ON an error would
    -- otherwise end the batch with it held). Inside TRY an error goes straight to the
    -- CATCH, so @ErrNo stays 0 there.
    EXEC @LockResult = sys.sp_getapplock
        @Resource = N'dbo.Notification',
        @LockMode = 'Exclusive',
        @LockOwner = 'Session',
        @LockTimeout = 10000
    WITH RESULT SETS NONE;
    IF (@LockResult < 0)
        BEGIN
            RAISERROR (735709, 16, 1, @Proc, N'dbo.Notification', @LockResult);
            GOTO EXIT_ERROR;
        END;
    BEGIN TRY
        -- A statement that waits on a lock here keeps every producer waiting for the
        -- enqueue lock: give up first (1222), into the CATCH that releases it. SQL Server
        -- restores the caller's setting on return.
        SET LOCK_TIMEOUT 5000;
        -- The last key, read without waiting: keys never change and are only added
        -- under the enqueue lock, so the last one is visible, committed or not;
        -- waiting on a row of an open transaction is what the lock must not do.
        SELECT TOP (1) @Last = n.EnqueuedAt
        FROM dbo.Notification AS n WITH (READUNCOMMITTED)
        ORDER BY n.EnqueuedAt DESC;
        SET @EnqueuedAt = dbo.QueueNextKey_fn(@Last);

        INSERT INTO dbo.Notification (EnqueuedAt, [Type], ScheduledFor, UpdatedAt, [Priority], GroupKey, DedupKey)
        VALUES (
            @EnqueuedAt,
            'ResetPassword',
            ISNULL(@ScheduledFor, @EnqueuedAt),
            @EnqueuedAt,
            ISNULL(@Priority, 0),
            @GroupKey,
            @DedupKey
        );
        SELECT
            @RowCnt = @@ROWCOUNT,
            @ErrNo = @@ERROR;
    END TRY
    BEGIN CATCH
        IF (APPLOCK_MODE(N'public', N'dbo.Notification', N'Session') <> N'NoLock')
            EXEC sys.sp_releaseapplock @Resource = N'dbo.Notification', @LockOwner = 'Session'
            WITH RESULT SETS NONE;
        THROW;
    END CATCH;
    EXEC sys.sp_releaseapplock @Resource = N'dbo.Notification', @LockOwner = 'Session'
    WITH RESULT SETS NONE;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;

    INSERT INTO dbo.Notification_ResetPassword (EnqueuedAt, OTP, UserID, Username)
    VALUES (@EnqueuedAt, @OTP, @UserID, @Username);
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;

    IF (@EmailTo IS NOT NULL)
        BEGIN
            INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage)
            VALUES (@EnqueuedAt, @EmailTo, ISNULL(@PreferredLanguage, N'en'));
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_ERROR;
                END;
        END;

    IF (@PhoneNumber IS NOT NULL)
        BEGIN
            INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber)
            VALUES (@EnqueuedAt, @PhoneNumber);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_ERROR;
                END;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

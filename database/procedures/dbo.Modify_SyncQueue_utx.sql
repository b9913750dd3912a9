SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Modify_SyncQueue_utx: a worker reports on a SyncQueue item it claimed, inside
   the caller's transaction (seed 000's Modify_):
   - the item must exist (50004), carry the caller's token (50005: someone else
     changed it since) and still be editable (50008, dbo.QueueIsEditable_fn);
   - an Error outcome when the attempts are spent ('syncqueue.maxAttempts',
     default 3) becomes Failed. The seed forces Failed for every outcome but
     Completed; here only an outcome that asks for another attempt does, so a
     step advance (Processing) on the last attempt and the other terminal
     outcomes keep their meaning;
   - the move must be a row of dbo.QueueTransition (50006);
   - Duration is set when an attempt ends (Processing to any other state), kept otherwise;
   - Failed -> Pending is a retry by hand: the attempts start again from 0;
   - Step, Response and Error are kept unless given; an Error outcome is due
     again at @ScheduledFor (default: now).
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read with the item (from Next_ or Modify_).
   @Status: the outcome, a row of dbo.QueueStatus.
   @Step: the step reached, for multi-step jobs; NULL keeps the recorded one.
     Wider than dbo.QueueStep on purpose: SQL Server cuts an over-long argument
     silently, so its length (at most 50) is checked here.
   @Response: the response body of the attempt; NULL keeps the recorded one.
   @Error: the error of the attempt; NULL keeps the recorded one.
   @ScheduledFor: for an Error outcome, when to try again (UTC).
   @NewUpdatedAt: OUTPUT, the item's new token.
   Returns 0; 1 on error: 50002 outside a transaction, 50003, 50004, 50005,
   50006, 50007 a missing or invalid parameter, 50008. On error the caller
   rolls back; nothing is written before the checks pass. */
CREATE OR ALTER PROCEDURE dbo.Modify_SyncQueue_utx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp],
    @Status dbo.QueueState,
    @Step VARCHAR(400) = NULL,
    @Response dbo.WebResponse = NULL,
    @Error dbo.WebResponse = NULL,
    @ScheduledFor dbo.[_Timestamp] = NULL,
    @NewUpdatedAt dbo.[_Timestamp] = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Modify_SyncQueue_utx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @MaxAttempts INT = dbo.AppSettingInt_fn('syncqueue.maxAttempts');
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @EnqueuedAt, 126);
    DECLARE @TokenText NVARCHAR(40) = CONVERT(NVARCHAR(40), @UpdatedAt, 126);
    DECLARE @Current dbo.QueueState;
    DECLARE @CurrentToken dbo.[_Timestamp];
    DECLARE @AttemptNum dbo.AttemptNum;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SET @NewUpdatedAt = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (50002, 16, 1, N'dbo.Modify_SyncQueue_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@EnqueuedAt IS NULL OR @UpdatedAt IS NULL)
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@EnqueuedAt and @UpdatedAt (the token read with the item) are required');
            GOTO EXIT_ERROR;
        END;
    IF (@Status IS NULL OR NOT EXISTS (
        SELECT 1 FROM dbo.QueueStatus AS s
        WHERE s.[Status] = @Status
    ))
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@Status must be one of the states in dbo.QueueStatus');
            GOTO EXIT_ERROR;
        END;
    IF (@Step IS NOT NULL AND (LTRIM(RTRIM(@Step)) = '' OR LEN(@Step) > 50))
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@Step must be 1 to 50 characters: pass NULL to keep the recorded step');
            GOTO EXIT_ERROR;
        END;

    SELECT
        @Current = q.[Status],
        @CurrentToken = q.UpdatedAt,
        @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q WITH (UPDLOCK, ROWLOCK)
    WHERE q.EnqueuedAt = @EnqueuedAt;
    IF (@Current IS NULL)
        BEGIN
            RAISERROR (50004, 16, 1, @Proc, @Key);
            GOTO EXIT_ERROR;
        END;
    IF (@CurrentToken <> @UpdatedAt)
        BEGIN
            RAISERROR (50005, 16, 1, @Proc, @Key, @TokenText);
            GOTO EXIT_ERROR;
        END;
    IF (dbo.QueueIsEditable_fn(@Current) = 0)
        BEGIN
            RAISERROR (50008, 16, 1, @Proc, @Key, @Current);
            GOTO EXIT_ERROR;
        END;
    IF (@Status = 'Error' AND @AttemptNum >= @MaxAttempts) SET @Status = 'Failed';
    IF (dbo.QueueCanTransition_fn(@Current, @Status) = 0)
        BEGIN
            RAISERROR (50006, 16, 1, @Proc, @Key, @Current, @Status);
            GOTO EXIT_ERROR;
        END;

    SET @NewUpdatedAt = dbo.QueueNextKey_fn(@CurrentToken);
    UPDATE dbo.SyncQueue
    SET
        [Status] = @Status,
        [Step] = ISNULL(@Step, [Step]),
        AttemptNum = CASE WHEN @Current = 'Failed' AND @Status = 'Pending' THEN 0 ELSE AttemptNum END,
        Response = ISNULL(@Response, Response),
        Error = ISNULL(@Error, Error),
        Duration = CASE
            WHEN @Current = 'Processing' AND @Status <> 'Processing' THEN DATEDIFF_BIG(MILLISECOND, StartedAt, @Now)
            ELSE Duration
        END,
        ScheduledFor = CASE
            WHEN @Status = 'Error' THEN ISNULL(@ScheduledFor, @Now)
            ELSE ScheduledFor
        END,
        UpdatedAt = @NewUpdatedAt
    WHERE EnqueuedAt = @EnqueuedAt AND UpdatedAt = @UpdatedAt;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (50003, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Modify_SyncQueue_utx: a worker reports on a SyncQueue item it claimed, inside
   the caller's transaction (seed 000's Modify_):
   - the item must exist (735704), carry the caller's token and still be editable
     (735708, dbo.QueueIsEditable_fn). A stale token is 735710 when the item was
     claimed again since (the caller's lease expired, or its worker restarted,
     and another attempt now owns the item), 735705 otherwise. A late report on
     an expired lease that nobody took over is accepted: the item is still the
     caller's;
   - an Error outcome when the attempts are spent ('syncqueue.maxAttempts',
     default 3) becomes Failed. The seed forces Failed for every outcome but
     Completed; here only an outcome that asks for another attempt does, so a
     step advance (Processing) on the last attempt and the other terminal
     outcomes keep their meaning;
   - the move must be a row of dbo.QueueTransition (735706);
   - an attempt ends when the item leaves Processing: Duration is set, the lease
     cleared, and the attempt's row in dbo.SyncQueueAttempt gets the outcome,
     Duration, Step, Response and Error. A step advance (Processing to
     Processing) records the step on the attempt and renews the lease: it is
     proof of life;
   - Processing -> Pending releases an item unworked (a worker shutting down):
     the attempt is given back (AttemptNum - 1), the attempt row ends as
     Pending, and the item is due again at once (or at @ScheduledFor);
   - only a claim (Next_) moves an item into Processing: from any other state
     than Processing (a step advance) that move is refused here (735706);
   - Failed -> Pending is a retry by hand, done as dbo.Move_SyncQueue_utx's Retry
     does it: a fresh attempt budget, due at @ScheduledFor or now, and 735711 if
     an unfinished item has taken its DedupKey meanwhile; it takes no other
     argument than @ScheduledFor (735707);
   - an item of a batch that reaches a final state counts in its batch, in this
     transaction (dbo.Count_QueueBatch_utx): the last of a sealed batch enqueues
     the batch's callback;
   - Step, Response and Error are kept unless given; an Error outcome is due
     again at @ScheduledFor, by default after the queue's backoff
     (dbo.QueueBackoffMs_fn 'syncqueue': 1 s, doubling, at most 1 h, +-10%).
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read with the item (from Next_ or Modify_).
   @Status: the outcome, a row of dbo.QueueStatus.
   @Step: the step reached, for multi-step jobs; NULL keeps the recorded one.
     Wider than dbo.QueueStep on purpose: SQL Server cuts an over-long argument
     silently, so its length (at most 50) is checked here.
   @Response: the response body of the attempt; NULL keeps the recorded one.
   @Error: the error of the attempt; NULL keeps the recorded one.
   @ScheduledFor: for an Error outcome, when to try again (UTC); NULL: after the
     backoff. For a retry by hand, when it is due; NULL: now. For a release,
     when it is due; NULL: as it was.
   @NewUpdatedAt: OUTPUT, the item's new token.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735704, 735705,
   735706, 735707 a missing or invalid parameter, 735708, 735709 the lock of the
   item's DedupKey (taken for Pending from Failed) was not granted in 10 s,
   735710, 735711, 735723 the item's batch is gone, and the errors of a batch's
   callback (dbo.Callback_QueueBatch_utx). On error the caller rolls back; nothing is written before
   the checks pass. */
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
    DECLARE @StartedAt dbo.[_Timestamp];
    DECLARE @ClaimedAgainAt dbo.[_Timestamp];
    DECLARE @ClaimedBy dbo.WorkerName;
    DECLARE @ClaimedText NVARCHAR(40);
    DECLARE @Duration dbo.Duration;
    DECLARE @LeaseSeconds INT = dbo.AppSettingInt_fn('syncqueue.leaseSeconds');
    DECLARE @BackoffMs BIGINT;
    DECLARE @ErrNo INT;
    DECLARE @RetCode INT;
    DECLARE @ItemKeys dbo.ItemKeyList;
    DECLARE @BatchID INT;
    DECLARE @BatchCounts dbo.QueueBatchCountList;
    DECLARE @RowCnt INT;

    SET @NewUpdatedAt = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Modify_SyncQueue_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@EnqueuedAt IS NULL OR @UpdatedAt IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@EnqueuedAt and @UpdatedAt (the token read with the item) are required');
            GOTO EXIT_ERROR;
        END;
    IF (@Status IS NULL OR NOT EXISTS (
        SELECT 1 FROM dbo.QueueStatus AS s
        WHERE s.[Status] = @Status
    ))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Status must be one of the states in dbo.QueueStatus');
            GOTO EXIT_ERROR;
        END;
    IF (@Step IS NOT NULL AND (LTRIM(RTRIM(@Step)) = '' OR LEN(@Step) > 50))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Step must be 1 to 50 characters: pass NULL to keep the recorded step');
            GOTO EXIT_ERROR;
        END;

    -- Pending from Failed is a retry by hand (Move_'s Retry takes the lock of the item's
    -- DedupKey): take it before the row's lock, in Add_'s order, so the two cannot
    -- deadlock. From any other state the item keeps its key unfinished and takes no
    -- lock, so a worker putting an item back never waits for a producer. An item's
    -- DedupKey never changes, so it is read before the row is locked.
    IF (@Status = 'Pending')
        BEGIN
            INSERT INTO @ItemKeys (KeyColumn, ItemKey)
            SELECT
                'DedupKey' AS KeyColumn,
                q.DedupKey
            FROM dbo.SyncQueue AS q
            WHERE q.EnqueuedAt = @EnqueuedAt AND q.DedupKey IS NOT NULL AND q.[Status] = 'Failed';
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (@RowCnt > 0)
                BEGIN
                    EXEC @RetCode = dbo.Lock_ItemKeys_utx
                        @Queue = N'dbo.SyncQueue',
                        @ItemKeys = @ItemKeys,
                        @Caller = @Proc;
                    SELECT @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
                END;
        END;

    SELECT
        @Current = q.[Status],
        @CurrentToken = q.UpdatedAt,
        @AttemptNum = q.AttemptNum,
        @StartedAt = q.StartedAt,
        @BatchID = q.BatchID
    FROM dbo.SyncQueue AS q WITH (UPDLOCK, ROWLOCK)
    WHERE q.EnqueuedAt = @EnqueuedAt;
    IF (@Current IS NULL)
        BEGIN
            RAISERROR (735704, 16, 1, @Proc, @Key);
            GOTO EXIT_ERROR;
        END;
    IF (@CurrentToken <> @UpdatedAt)
        BEGIN
            -- Claims only move tokens forward: an attempt started after the caller's
            -- token means the item was taken over.
            SELECT TOP (1)
                @ClaimedAgainAt = a.StartedAt,
                @ClaimedBy = a.LockedBy
            FROM dbo.SyncQueueAttempt AS a
            WHERE a.EnqueuedAt = @EnqueuedAt AND a.StartedAt > @UpdatedAt
            ORDER BY a.StartedAt DESC;
            IF (@ClaimedAgainAt IS NOT NULL)
                BEGIN
                    SET @ClaimedText = CONVERT(NVARCHAR(40), @ClaimedAgainAt, 126);
                    RAISERROR (735710, 16, 1, @Proc, @Key, @ClaimedText, @ClaimedBy);
                    GOTO EXIT_ERROR;
                END;
            RAISERROR (735705, 16, 1, @Proc, @Key, @TokenText);
            GOTO EXIT_ERROR;
        END;
    IF (dbo.QueueIsEditable_fn(@Current) = 0)
        BEGIN
            RAISERROR (735708, 16, 1, @Proc, @Key, @Current);
            GOTO EXIT_ERROR;
        END;
    IF (@Status = 'Error' AND @AttemptNum >= @MaxAttempts) SET @Status = 'Failed';
    IF (
        dbo.QueueCanTransition_fn(@Current, @Status) = 0
        OR (@Status = 'Processing' AND @Current <> 'Processing')
    )
        BEGIN
            RAISERROR (735706, 16, 1, @Proc, @Key, @Current, @Status);
            GOTO EXIT_ERROR;
        END;
    IF (@Current = 'Failed' AND @Status = 'Pending')
        BEGIN
            IF (
                @Step IS NOT NULL OR @Response IS NOT NULL OR @Error IS NOT NULL
            )
                BEGIN
                    RAISERROR (735707, 16, 1, @Proc, N'a retry by hand (Failed to Pending) takes only @ScheduledFor');
                    GOTO EXIT_ERROR;
                END;
            EXEC @RetCode = dbo.Move_SyncQueue_utx
                @EnqueuedAt = @EnqueuedAt,
                @UpdatedAt = @UpdatedAt,
                @Action = 'Retry',
                @ScheduledFor = @ScheduledFor,
                @NewUpdatedAt = @NewUpdatedAt OUTPUT;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
            RETURN 0;
        END;

    IF (@Current = 'Processing' AND @Status <> 'Processing')
        SET @Duration = DATEDIFF_BIG(MILLISECOND, @StartedAt, @Now);
    IF (@Status = 'Error' AND @ScheduledFor IS NULL)
        BEGIN
            SET @BackoffMs = dbo.QueueBackoffMs_fn('syncqueue', @AttemptNum, RAND());
            SET @ScheduledFor = DATEADD(
                MILLISECOND, CONVERT(INT, @BackoffMs % 1000), DATEADD(SECOND, CONVERT(INT, @BackoffMs / 1000), @Now)
            );
        END;

    SET @NewUpdatedAt = dbo.QueueNextKey_fn(@CurrentToken);
    UPDATE dbo.SyncQueue
    SET
        [Status] = @Status,
        [Step] = ISNULL(@Step, [Step]),
        Response = ISNULL(@Response, Response),
        Error = ISNULL(@Error, Error),
        AttemptNum = CASE WHEN @Current = 'Processing' AND @Status = 'Pending' THEN AttemptNum - 1 ELSE AttemptNum END,
        Duration = ISNULL(@Duration, Duration),
        ScheduledFor = CASE
            WHEN @Status = 'Error' THEN @ScheduledFor
            WHEN @Status = 'Pending' THEN ISNULL(@ScheduledFor, ScheduledFor)
            ELSE ScheduledFor
        END,
        -- a step advance renews the lease, and never shortens one Extend_ made longer
        LeaseUntil = CASE
            WHEN @Status = 'Processing' AND LeaseUntil > DATEADD(SECOND, @LeaseSeconds, @Now) THEN LeaseUntil
            WHEN @Status = 'Processing' THEN DATEADD(SECOND, @LeaseSeconds, @Now)
        END,
        UpdatedAt = @NewUpdatedAt
    WHERE EnqueuedAt = @EnqueuedAt AND UpdatedAt = @UpdatedAt;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    IF (@Current = 'Processing')
        BEGIN
            UPDATE dbo.SyncQueueAttempt
            SET
                [Step] = ISNULL(@Step, [Step]),
                Outcome = CASE WHEN @Status <> 'Processing' THEN @Status END,
                Duration = @Duration,
                Response = ISNULL(@Response, Response),
                Error = COALESCE(
                    @Error, CASE WHEN @Status = 'Pending' THEN N'released unworked by its worker' END, Error
                )
            WHERE EnqueuedAt = @EnqueuedAt AND Outcome IS NULL;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
        END;
    -- After the item's row, the batch's: every final report of a batch takes its row's lock
    -- in this order, so two reports of one batch cannot deadlock.
    IF (@BatchID IS NOT NULL AND dbo.QueueIsFinished_fn(@Status) = 1)
        BEGIN
            INSERT INTO @BatchCounts (BatchID, [Status], Items) VALUES (@BatchID, @Status, 1);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            EXEC @RetCode = dbo.Count_QueueBatch_utx
                @Counts = @BatchCounts,
                @Caller = @Proc;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Move_Notification_utx: the item-level controls of a Notification item, for
   operators and applications rather than workers, inside the caller's
   transaction. Each is a move the lifecycle allows (dbo.QueueTransition, else
   735706) from a state a control may change (dbo.QueueIsEditable_fn, else 735708;
   Paused, which workers may not touch, is what Resume and Cancel are for):
     Cancel      Pending, Processing, Error or Paused -> Cancelled
     Pause       Pending or Error -> Paused: no worker claims it until resumed
     Resume      Paused -> Pending, due at @ScheduledFor if given
     Terminate   Processing -> Terminated: stop a running attempt for good
     Retry       Failed -> Pending with a fresh attempt budget, due at
                 @ScheduledFor (default now); 735711 when an unfinished item has
                 taken its DedupKey meanwhile
     Reschedule  a Pending, Error or Paused item is due at @ScheduledFor instead
   An item of a batch counts in its batch in this transaction
   (dbo.Count_QueueBatch_utx): Cancel and Terminate add it to the batch's
   Cancelled or Terminated (the last of a sealed batch enqueues its callback);
   Retry takes it back from Failed, so the batch waits for it again, unless its
   callback was enqueued already: a callback is enqueued once, and the batch's
   counts go on following its items.
   Cancelling or terminating an item in Processing ends its attempt in
   dbo.NotificationAttempt with that outcome; the worker's later report is refused
   (735705: its token is stale, and reading the item again shows why).
   @EnqueuedAt: the item's key.
   @UpdatedAt: the token the caller read, checked when given (735705 when stale);
     NULL acts on the item as it is now, as an operator usually does.
   @Action: Cancel, Pause, Resume, Terminate, Retry or Reschedule.
   @ScheduledFor: the new due time (UTC) for Resume, Retry and Reschedule.
   @NewUpdatedAt: OUTPUT, the item's new token.
   Returns 0; 1 on error: 735702 outside a transaction, 735703, 735704 no such
   item, 735705, 735706, 735707 a missing or invalid parameter, 735708, 735709 the
   lock of a retried item's DedupKey was not granted in 10 s, 735711, 735723 the
   item's batch is gone, and the errors of a batch's callback. On
   error the caller rolls back; nothing is written before the checks pass. */
CREATE OR ALTER PROCEDURE dbo.Move_Notification_utx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp] = NULL,
    @Action VARCHAR(20),
    @ScheduledFor dbo.[_Timestamp] = NULL,
    @NewUpdatedAt dbo.[_Timestamp] = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Move_Notification_utx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @EnqueuedAt, 126);
    DECLARE @TokenText NVARCHAR(40) = CONVERT(NVARCHAR(40), @UpdatedAt, 126);
    DECLARE @Current dbo.QueueState;
    DECLARE @CurrentToken dbo.[_Timestamp];
    DECLARE @StartedAt dbo.[_Timestamp];
    DECLARE @DedupKey dbo.DedupKey;
    DECLARE @DedupHolder dbo.[_Timestamp];
    DECLARE @DedupHolderText NVARCHAR(40);
    DECLARE @Target dbo.QueueState;
    DECLARE @Duration dbo.Duration;
    DECLARE @RetCode INT;
    DECLARE @ItemKeys dbo.ItemKeyList;
    DECLARE @BatchID INT;
    DECLARE @BatchCounts dbo.QueueBatchCountList;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SET @NewUpdatedAt = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, N'dbo.Move_Notification_utx');
            GOTO EXIT_ERROR;
        END;
    IF (@EnqueuedAt IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@EnqueuedAt is required');
            GOTO EXIT_ERROR;
        END;
    SET @Target = CASE @Action
        WHEN 'Cancel' THEN 'Cancelled'
        WHEN 'Pause' THEN 'Paused'
        WHEN 'Resume' THEN 'Pending'
        WHEN 'Terminate' THEN 'Terminated'
        WHEN 'Retry' THEN 'Pending'
    END;
    IF (@Target IS NULL AND ISNULL(@Action, '') <> 'Reschedule')
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Action must be Cancel, Pause, Resume, Terminate, Retry or Reschedule');
            GOTO EXIT_ERROR;
        END;
    IF (@ScheduledFor IS NOT NULL AND @Action IN ('Cancel', 'Pause', 'Terminate'))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@ScheduledFor goes with Resume, Retry and Reschedule only');
            GOTO EXIT_ERROR;
        END;
    IF (@Action = 'Reschedule' AND @ScheduledFor IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@ScheduledFor is required to reschedule');
            GOTO EXIT_ERROR;
        END;

    -- A retry (of a Failed item: its key is free) checks its DedupKey under that key's
    -- lock (dbo.Lock_ItemKeys_utx), as Add_ does, so that a retry and an enqueue of the
    -- same key cannot both find it free. Taken before the row's lock, in Add_'s order,
    -- so the two cannot deadlock; an item's DedupKey never changes, so it is read
    -- before the row is locked.
    IF (@Action = 'Retry')
        BEGIN
            INSERT INTO @ItemKeys (KeyColumn, ItemKey)
            SELECT
                'DedupKey' AS KeyColumn,
                n.DedupKey
            FROM dbo.Notification AS n
            WHERE n.EnqueuedAt = @EnqueuedAt AND n.DedupKey IS NOT NULL AND n.[Status] = 'Failed';
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
        END;

    SELECT
        @Current = n.[Status],
        @CurrentToken = n.UpdatedAt,
        @StartedAt = n.StartedAt,
        @DedupKey = n.DedupKey,
        @BatchID = n.BatchID
    FROM dbo.Notification AS n WITH (UPDLOCK, ROWLOCK)
    WHERE n.EnqueuedAt = @EnqueuedAt;
    IF (@Current IS NULL)
        BEGIN
            RAISERROR (735704, 16, 1, @Proc, @Key);
            GOTO EXIT_ERROR;
        END;
    IF (@UpdatedAt IS NOT NULL AND @CurrentToken <> @UpdatedAt)
        BEGIN
            RAISERROR (735705, 16, 1, @Proc, @Key, @TokenText);
            GOTO EXIT_ERROR;
        END;
    IF (
        dbo.QueueIsEditable_fn(@Current) = 0
        AND NOT (@Current = 'Paused' AND @Action IN ('Resume', 'Cancel', 'Reschedule'))
    )
        BEGIN
            RAISERROR (735708, 16, 1, @Proc, @Key, @Current);
            GOTO EXIT_ERROR;
        END;
    IF (@Action = 'Reschedule' AND dbo.QueueIsProcessable_fn(@Current) = 0)
        BEGIN
            RAISERROR (735708, 16, 1, @Proc, @Key, @Current);
            GOTO EXIT_ERROR;
        END;
    -- Failed -> Pending is Retry's move, Paused -> Pending Resume's: the transitions
    -- table allows both, so each action names the state it starts from.
    IF (
        (@Target IS NOT NULL AND dbo.QueueCanTransition_fn(@Current, @Target) = 0)
        OR (@Action = 'Resume' AND @Current <> 'Paused')
        OR (@Action = 'Retry' AND @Current <> 'Failed')
    )
        BEGIN
            RAISERROR (735706, 16, 1, @Proc, @Key, @Current, @Target);
            GOTO EXIT_ERROR;
        END;
    IF (@Action = 'Retry' AND @DedupKey IS NOT NULL)
        BEGIN
            SELECT @DedupHolder = n.EnqueuedAt
            FROM dbo.Notification AS n
            WHERE
                n.DedupKey = @DedupKey
                AND n.DedupKey IS NOT NULL
                AND n.[Status] IN ('Pending', 'Processing', 'Error', 'Paused');
            IF (@DedupHolder IS NOT NULL)
                BEGIN
                    SET @DedupHolderText = CONVERT(NVARCHAR(40), @DedupHolder, 126);
                    RAISERROR (735711, 16, 1, @Proc, @Key, @DedupHolderText);
                    GOTO EXIT_ERROR;
                END;
        END;
    IF (@Current = 'Processing') SET @Duration = DATEDIFF_BIG(MILLISECOND, @StartedAt, @Now);

    SET @NewUpdatedAt = dbo.QueueNextKey_fn(@CurrentToken);
    UPDATE dbo.Notification
    SET
        [Status] = ISNULL(@Target, [Status]),
        AttemptNum = CASE WHEN @Action = 'Retry' THEN 0 ELSE AttemptNum END,
        Duration = ISNULL(@Duration, Duration),
        LeaseUntil = CASE WHEN @Current <> 'Processing' THEN LeaseUntil END,
        ScheduledFor = CASE
            WHEN @Action = 'Retry' THEN ISNULL(@ScheduledFor, @Now)
            WHEN @Action IN ('Resume', 'Reschedule') THEN ISNULL(@ScheduledFor, ScheduledFor)
            ELSE ScheduledFor
        END,
        UpdatedAt = @NewUpdatedAt
    WHERE EnqueuedAt = @EnqueuedAt AND UpdatedAt = @CurrentToken;
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
            UPDATE dbo.NotificationAttempt
            SET
                Outcome = @Target,
                Duration = @Duration
            WHERE EnqueuedAt = @EnqueuedAt AND Outcome IS NULL;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
        END;

    -- After the item's row, the batch's, as in Modify_: a move into a final state adds the
    -- item to its batch's count, a Retry takes it back from Failed.
    IF (@BatchID IS NOT NULL AND (@Action = 'Retry' OR dbo.QueueIsFinished_fn(@Target) = 1))
        BEGIN
            INSERT INTO @BatchCounts (BatchID, [Status], Items)
            VALUES (
                @BatchID,
                CASE WHEN @Action = 'Retry' THEN 'Failed' ELSE @Target END,
                CASE WHEN @Action = 'Retry' THEN -1 ELSE 1 END
            );
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

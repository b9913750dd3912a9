SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Extend_SyncQueue_trx: renews the lease on a SyncQueue item the caller
   holds, so that a long attempt is not taken for abandoned: LeaseUntil becomes
   now + @LeaseSeconds. Call it well before the lease runs out (every third of
   it, say). The caller proves it holds the item with its current token, and
   gets a new one. A lease that ran out is renewed too, as long as nobody took
   the item over.
   @EnqueuedAt: the item's key.
   @UpdatedAt: the caller's current token for it (from Next_, Modify_ or Extend_).
   @LeaseSeconds: the new lease, 1 to 86400 s; NULL: 'syncqueue.leaseSeconds'.
   Returns 0 with one row (EnqueuedAt, UpdatedAt, LeaseUntil); 1 on error: 735701
   inside a transaction, 735703, 735704 no such item, 735705 a stale token, 735706
   the item is not in Processing, 735707 a missing or invalid parameter, 735710 the
   item was claimed again since the caller's token. */
CREATE OR ALTER PROCEDURE dbo.Extend_SyncQueue_trx
    @EnqueuedAt dbo.[_Timestamp],
    @UpdatedAt dbo.[_Timestamp],
    @LeaseSeconds INT = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Extend_SyncQueue_trx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key NVARCHAR(40) = CONVERT(NVARCHAR(40), @EnqueuedAt, 126);
    DECLARE @TokenText NVARCHAR(40) = CONVERT(NVARCHAR(40), @UpdatedAt, 126);
    DECLARE @Current dbo.QueueState;
    DECLARE @CurrentToken dbo.[_Timestamp];
    DECLARE @ClaimedAgainAt dbo.[_Timestamp];
    DECLARE @ClaimedBy dbo.WorkerName;
    DECLARE @ClaimedText NVARCHAR(40);
    DECLARE @NewUpdatedAt dbo.[_Timestamp];
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Extend_SyncQueue_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@EnqueuedAt IS NULL OR @UpdatedAt IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@EnqueuedAt and @UpdatedAt (the token read with the item) are required');
            GOTO EXIT_ERROR;
        END;
    SET @LeaseSeconds = ISNULL(@LeaseSeconds, dbo.AppSettingInt_fn('syncqueue.leaseSeconds'));
    IF (@LeaseSeconds IS NULL OR @LeaseSeconds NOT BETWEEN 1 AND 86400)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@LeaseSeconds must be 1 to 86400');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Extend_SyncQueue;
    SELECT
        @Current = q.[Status],
        @CurrentToken = q.UpdatedAt
    FROM dbo.SyncQueue AS q WITH (UPDLOCK, ROWLOCK)
    WHERE q.EnqueuedAt = @EnqueuedAt;
    IF (@Current IS NULL)
        BEGIN
            RAISERROR (735704, 16, 1, @Proc, @Key);
            GOTO EXIT_TRANSACTION;
        END;
    IF (@CurrentToken <> @UpdatedAt)
        BEGIN
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
                    GOTO EXIT_TRANSACTION;
                END;
            RAISERROR (735705, 16, 1, @Proc, @Key, @TokenText);
            GOTO EXIT_TRANSACTION;
        END;
    IF (@Current <> 'Processing')
        BEGIN
            RAISERROR (735706, 16, 1, @Proc, @Key, @Current, N'Processing');
            GOTO EXIT_TRANSACTION;
        END;

    SET @NewUpdatedAt = dbo.QueueNextKey_fn(@CurrentToken);
    UPDATE dbo.SyncQueue
    SET
        LeaseUntil = DATEADD(SECOND, @LeaseSeconds, @Now),
        UpdatedAt = @NewUpdatedAt
    WHERE EnqueuedAt = @EnqueuedAt AND UpdatedAt = @UpdatedAt;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Extend_SyncQueue;

    SELECT
        v.EnqueuedAt,
        v.UpdatedAt,
        v.LeaseUntil
    FROM dbo.Worker_SyncQueue_V AS v
    WHERE v.EnqueuedAt = @EnqueuedAt;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Extend_SyncQueue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Next_SyncQueue_utx: claims the next due SyncQueue item inside the caller's
   transaction (seed 000's Next_): the earliest ScheduledFor among the Pending
   and Error items that are due and have attempts left (dbo.AppSettingInt_fn
   'syncqueue.maxAttempts', default 3). UPDLOCK and ROWLOCK hold the row it claims;
   READPAST skips rows other workers hold, so workers never wait on each other.
   It runs at READ COMMITTED whatever the caller's level: SQL Server refuses
   READPAST under SERIALIZABLE, and a SNAPSHOT read could pick a taken row.
   @EnqueuedAt: OUTPUT, the claimed item's key; NULL when nothing is due.
   @UpdatedAt: OUTPUT, its new concurrency token, to pass to Modify_.
   Returns 0, also when nothing is due; 1 on error: 50002 outside a transaction,
   50003 the claim changed no row. On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Next_SyncQueue_utx
    @EnqueuedAt dbo.[_Timestamp] = NULL OUTPUT,
    @UpdatedAt dbo.[_Timestamp] = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Next_SyncQueue_utx';
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @MaxAttempts INT = dbo.AppSettingInt_fn('syncqueue.maxAttempts');
    DECLARE @Token dbo.[_Timestamp];
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SELECT
        @EnqueuedAt = NULL,
        @UpdatedAt = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (50002, 16, 1, N'dbo.Next_SyncQueue_utx');
            GOTO EXIT_ERROR;
        END;

    SELECT TOP (1)
        @EnqueuedAt = q.EnqueuedAt,
        @Token = q.UpdatedAt  -- read from the row: the lock must cover it (see the claim index)
    FROM dbo.SyncQueue AS q WITH (UPDLOCK, ROWLOCK, READPAST)
    WHERE
        q.[Status] IN ('Pending', 'Error')
        AND q.ScheduledFor <= @Now
        AND q.AttemptNum < @MaxAttempts
    ORDER BY q.ScheduledFor, q.EnqueuedAt;

    IF (@EnqueuedAt IS NULL) RETURN 0;

    SET @UpdatedAt = dbo.QueueNextKey_fn(@Token);
    UPDATE dbo.SyncQueue
    SET
        [Status] = 'Processing',
        AttemptNum = AttemptNum + 1,
        StartedAt = @Now,
        UpdatedAt = @UpdatedAt
    WHERE EnqueuedAt = @EnqueuedAt;
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

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Next_SyncQueue_Batch_trx: claims up to @BatchSize SyncQueue items for
   the worker @LockedBy (dbo.Next_SyncQueue_utx decides which) and commits,
   waiting up to @WaitMs for work when none is due (long-poll): it tries again
   after a pause, with no transaction open between tries, and returns as soon as
   a claim succeeds. The pause is 100 ms for the first second of the wait, then
   doubles up to 800 ms: an item that comes due later in a long wait may wait up
   to 800 ms for the call (not 100 ms), and a 60 s wait makes about 85 claims
   instead of 600.
   What a wait costs: the call holds a SQL Server worker thread for its whole
   wait (each WAITFOR has a thread of its own, and under thread starvation SQL
   Server ends some of them:
   https://learn.microsoft.com/sql/t-sql/language-elements/waitfor-transact-sql)
   and runs a claim transaction after every pause, per waiting caller. relq's
   worker (relq.worker) does not wait here: it claims with @WaitMs = 0 and its
   idle slots share one poll between short claims (docs/workers.md).
   @LockedBy: the worker slot claiming; NULL records HOST_NAME()/@@SPID (see
     dbo.Next_SyncQueue_utx).
   @BatchSize: how many items at most, 1 to 1000 (default 1).
   @WaitMs: how long to wait for a due item, 0 to 60000 ms (default 0: do not wait).
   @Type: claim only items of this job type; NULL (the default): any.
   Returns 0 with one row per claimed item (EnqueuedAt, UpdatedAt, LeaseUntil,
   AttemptNum, from dbo.Worker_SyncQueue_V) in claim order, none when nothing
   came due in time; 1 on error: 735701 inside a transaction, 735707 a bad @LockedBy,
   @BatchSize, @WaitMs or @Type, and the errors of dbo.Next_SyncQueue_utx. */
CREATE OR ALTER PROCEDURE dbo.Next_SyncQueue_Batch_trx
    @LockedBy NVARCHAR(400) = NULL,
    @BatchSize INT = 1,
    @WaitMs INT = 0,
    @Type VARCHAR(400) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Next_SyncQueue_Batch_trx';
    DECLARE @Started DATETIME2(7);
    DECLARE @Deadline DATETIME2(7);
    DECLARE @LeftMs INT;
    DECLARE @PauseMs INT = 100;
    DECLARE @Pause CHAR(12);
    DECLARE @Claimed NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @ErrNo INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Next_SyncQueue_Batch_trx');
            GOTO EXIT_ERROR;
        END;
    -- Checked here too, before the transaction: a caller whose TRY...CATCH takes
    -- over at the _utx's error would find the transaction still open.
    IF (LTRIM(RTRIM(@LockedBy)) = N'' OR DATALENGTH(@LockedBy) > 256)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@LockedBy must name the worker slot in 1 to 128 characters');
            GOTO EXIT_ERROR;
        END;
    IF (
        @Type IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM dbo.SyncQueueType AS t
            WHERE t.[Type] = @Type
        )
    )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Type must be a job type of dbo.SyncQueueType, or NULL for any');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize < 1 OR @BatchSize > 1000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1000');
            GOTO EXIT_ERROR;
        END;
    IF (@WaitMs IS NULL OR @WaitMs < 0 OR @WaitMs > 60000)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@WaitMs must be 0 to 60000');
            GOTO EXIT_ERROR;
        END;
    SET @Started = SYSUTCDATETIME();
    SET @Deadline = DATEADD(MILLISECOND, @WaitMs, @Started);

    WHILE (1 = 1)
        BEGIN
            BEGIN TRANSACTION Next_SyncQueue_Batch;
            EXEC @RetCode = dbo.Next_SyncQueue_utx
                @LockedBy = @LockedBy,
                @BatchSize = @BatchSize,
                @Type = @Type,
                @Claimed = @Claimed OUTPUT;
            SELECT @ErrNo = @@ERROR;
            IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
            COMMIT TRANSACTION Next_SyncQueue_Batch;

            SET @LeftMs = DATEDIFF(MILLISECOND, SYSUTCDATETIME(), @Deadline);
            IF (@Claimed IS NOT NULL OR @LeftMs <= 0) BREAK;
            -- 100 ms in the first second of the wait, then doubling up to 800 ms.
            SET
                @PauseMs
                = CASE
                    WHEN DATEDIFF(MILLISECOND, @Started, SYSUTCDATETIME()) < 1000 THEN 100
                    WHEN @PauseMs >= 400 THEN 800
                    ELSE @PauseMs * 2
                END;
            -- WAITFOR DELAY takes 'hh:mm:ss.fff' and no date part: under a second here.
            SET
                @Pause
                = '00:00:00.'
                + RIGHT('00' + CAST(CASE WHEN @LeftMs < @PauseMs THEN @LeftMs ELSE @PauseMs END AS VARCHAR(3)), 3);
            WAITFOR DELAY @Pause;
        END;

    SELECT
        v.EnqueuedAt,
        v.UpdatedAt,
        v.LeaseUntil,
        v.AttemptNum
    FROM OPENJSON(@Claimed) AS j
    CROSS APPLY OPENJSON (j.[value]) WITH (EnqueuedAt DATETIME2(7)) AS c
    INNER JOIN dbo.Worker_SyncQueue_V AS v ON c.EnqueuedAt = v.EnqueuedAt
    ORDER BY CAST(j.[key] AS INT);
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Next_SyncQueue_Batch;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Pause_Queue_trx: pauses a whole relational queue, or one job type of it: from the
   next claim on, dbo.Next_<Queue>_utx (and so every Next_, the worker and the drain) takes
   nothing of it, not even items whose lease ran out; items already in Processing finish
   normally, and enqueueing goes on. Records who paused it, when (UTC) and why in
   dbo.QueueControl, without a deploy; dbo.Resume_Queue_trx undoes it. Pausing what is
   paused already records the new who, when and why. A paused queue's types stay paused
   or not on their own: resuming the queue leaves a paused type paused.
   Not the item control dbo.Pause_<Queue>_trx, which pauses one item.
   @Queue: the queue, the name of its table (Notification, SyncQueue).
   @Type: one of its job types (a row of dbo.<Queue>Type); NULL: the whole queue.
   @PauseReason: why, 1 to 400 characters: shown with the pause wherever it is shown.
   @PausedBy: who pauses it, 1 to 128 characters; NULL: ORIGINAL_LOGIN(), the login that
     connected (a tool acting for a person, such as the dashboard, passes the person).
   Returns 0 with the control's row (Queue, Type, IsPaused, PausedBy, PausedAt,
   PauseReason); 1 on error: 735701 inside a transaction, 735717 an unknown queue or
   type, 735718 a blank or over-long reason or @PausedBy. */
CREATE OR ALTER PROCEDURE dbo.Pause_Queue_trx
    @Queue NVARCHAR(128),
    @Type VARCHAR(400) = NULL,
    @PauseReason NVARCHAR(MAX),
    @PausedBy NVARCHAR(MAX) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Pause_Queue_trx';
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    DECLARE @Who NVARCHAR(MAX) = ISNULL(@PausedBy, ORIGINAL_LOGIN());
    DECLARE @Target NVARCHAR(200) = ISNULL(@Queue, N'NULL') + ISNULL(N'.' + @Type, N'');
    DECLARE @Row VARCHAR(50) = ISNULL(@Type, '');
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Pause_Queue_trx');
            GOTO EXIT_ERROR;
        END;
    IF (
        @Queue IS NULL
        OR NOT (
            (
                @Queue = N'Notification'
                AND (
                    @Type IS NULL
                    OR EXISTS (
                        SELECT 1 FROM dbo.NotificationType AS t
                        WHERE t.[Type] = @Type
                    )
                )
            )
            OR
            (
                @Queue = N'SyncQueue'
                AND (
                    @Type IS NULL
                    OR EXISTS (
                        SELECT 1 FROM dbo.SyncQueueType AS t
                        WHERE t.[Type] = @Type
                    )
                )
            )
        )
    )
        BEGIN
            RAISERROR (735717, 16, 1, @Proc, @Target);
            GOTO EXIT_ERROR;
        END;
    IF (
        @PauseReason IS NULL OR LTRIM(RTRIM(@PauseReason)) = N'' OR LEN(@PauseReason) > 400
        OR LTRIM(RTRIM(@Who)) = N'' OR LEN(@Who) > 128
    )
        BEGIN
            RAISERROR (735718, 16, 1, @Proc, @Target);
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Pause_Queue;
    -- HOLDLOCK: a missing row's key range stays locked until the INSERT, so two pauses of
    -- one queue at once write one row, the second after the first.
    UPDATE c
    SET
        IsPaused = 1,
        PausedBy = @Who,
        PausedAt = @Now,
        PauseReason = @PauseReason,
        ResumedBy = NULL,
        ResumedAt = NULL
    FROM dbo.QueueControl AS c WITH (UPDLOCK, HOLDLOCK)
    WHERE c.[Queue] = @Queue AND c.[Type] = @Row;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason)
            VALUES (@Queue, @Row, 1, @Who, @Now, @PauseReason);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Pause_Queue;

    SELECT
        c.[Queue],
        c.[Type],
        c.IsPaused,
        c.PausedBy,
        c.PausedAt,
        c.PauseReason
    FROM dbo.QueueControl AS c
    WHERE c.[Queue] = @Queue AND c.[Type] = @Row;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Pause_Queue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

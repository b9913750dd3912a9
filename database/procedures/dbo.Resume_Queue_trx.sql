SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Resume_Queue_trx: resumes a queue or a job type that dbo.Pause_Queue_trx paused:
   the next claim takes its items again. Records who resumed it and when (UTC) in
   dbo.QueueControl, keeping the last pause's who, when and why. Resuming what is not
   paused changes nothing. Resuming a queue leaves its paused types paused.
   Not the item control dbo.Resume_<Queue>_trx, which resumes one item.
   @Queue: the queue, the name of its table (Notification, SyncQueue).
   @Type: one of its job types (a row of dbo.<Queue>Type); NULL: the whole queue.
   @ResumedBy: who resumes it, 1 to 128 characters; NULL: ORIGINAL_LOGIN().
   Returns 0 with the control's row (Queue, Type, IsPaused, ResumedBy, ResumedAt), none
   when it was never paused nor limited; 1 on error: 735701 inside a transaction, 735717
   an unknown queue or type, 735718 a blank or over-long @ResumedBy. */
CREATE OR ALTER PROCEDURE dbo.Resume_Queue_trx
    @Queue NVARCHAR(128),
    @Type VARCHAR(400) = NULL,
    @ResumedBy NVARCHAR(MAX) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Resume_Queue_trx';
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    DECLARE @Who NVARCHAR(MAX) = ISNULL(@ResumedBy, ORIGINAL_LOGIN());
    DECLARE @Target NVARCHAR(200) = ISNULL(@Queue, N'NULL') + ISNULL(N'.' + @Type, N'');
    DECLARE @Row VARCHAR(50) = ISNULL(@Type, '');
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Resume_Queue_trx');
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
    IF (LTRIM(RTRIM(@Who)) = N'' OR LEN(@Who) > 128)
        BEGIN
            RAISERROR (735718, 16, 1, @Proc, @Target);
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Resume_Queue;
    UPDATE c
    SET
        IsPaused = 0,
        ResumedBy = @Who,
        ResumedAt = @Now
    FROM dbo.QueueControl AS c WITH (UPDLOCK, HOLDLOCK)
    WHERE c.[Queue] = @Queue AND c.[Type] = @Row AND c.IsPaused = 1;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    COMMIT TRANSACTION Resume_Queue;

    SELECT
        c.[Queue],
        c.[Type],
        c.IsPaused,
        c.ResumedBy,
        c.ResumedAt
    FROM dbo.QueueControl AS c
    WHERE c.[Queue] = @Queue AND c.[Type] = @Row;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Resume_Queue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Limit_Queue_trx: sets a concurrency limit in dbo.QueueControl, without a deploy,
   for the claims that begin after it commits (items already in Processing above a lower
   limit finish normally):
   - with @Type, the type's limit: at most @Limit items of that job type in Processing at
     once, across all workers (dbo.Next_<Queue>_utx locks the type's row to count and
     claim, so that concurrent claims never exceed it; an item holds its slot until it
     leaves Processing, also after its lease ran out);
   - without, the queue's group limit: at most @Limit items of one GroupKey in
     Processing at once, the earliest enqueued first (1, the default: one at a time, in
     order).
   @Queue: the queue, the name of its table (Notification, SyncQueue).
   @Type: one of its job types (a row of dbo.<Queue>Type); NULL: the queue's group limit.
   @Limit: 1 to 32767; NULL: no limit for a type, 1 for the groups.
   @LimitSetBy: who sets it, 1 to 128 characters; NULL: ORIGINAL_LOGIN().
   Returns 0 with the control's row (Queue, Type, TypeLimit, GroupLimit, LimitSetBy,
   LimitSetAt); 1 on error: 735701 inside a transaction, 735717 an unknown queue or
   type, 735718 a blank or over-long @LimitSetBy, 735719 a limit below 1 or above
   32767. */
CREATE OR ALTER PROCEDURE dbo.Limit_Queue_trx
    @Queue NVARCHAR(128),
    @Type VARCHAR(400) = NULL,
    @Limit INT = NULL,
    @LimitSetBy NVARCHAR(MAX) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Limit_Queue_trx';
    DECLARE @Now DATETIME2(7) = SYSUTCDATETIME();
    DECLARE @Who NVARCHAR(MAX) = ISNULL(@LimitSetBy, ORIGINAL_LOGIN());
    DECLARE @Target NVARCHAR(200) = ISNULL(@Queue, N'NULL') + ISNULL(N'.' + @Type, N'');
    DECLARE @Row VARCHAR(50) = ISNULL(@Type, '');
    DECLARE @LimitText NVARCHAR(20) = CAST(@Limit AS NVARCHAR(20));
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Limit_Queue_trx');
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
    IF (@Limit < 1 OR @Limit > 32767)
        BEGIN
            RAISERROR (735719, 16, 1, @Proc, @LimitText);
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Limit_Queue;
    -- The row's X lock waits for the claims holding it (UPDLOCK) to commit; claims that
    -- begin after this commits read the new limit.
    UPDATE c
    SET
        TypeLimit = CASE WHEN @Type IS NULL THEN c.TypeLimit ELSE @Limit END,
        GroupLimit = CASE WHEN @Type IS NULL THEN @Limit ELSE c.GroupLimit END,
        LimitSetBy = @Who,
        LimitSetAt = @Now
    FROM dbo.QueueControl AS c WITH (UPDLOCK, HOLDLOCK)
    WHERE c.[Queue] = @Queue AND c.[Type] = @Row;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            INSERT INTO dbo.QueueControl ([Queue], [Type], TypeLimit, GroupLimit, LimitSetBy, LimitSetAt)
            VALUES (
                @Queue,
                @Row,
                CASE WHEN @Type IS NOT NULL THEN @Limit END,
                CASE WHEN @Type IS NULL THEN @Limit END,
                @Who,
                @Now
            );
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Limit_Queue;

    SELECT
        c.[Queue],
        c.[Type],
        c.TypeLimit,
        c.GroupLimit,
        c.LimitSetBy,
        c.LimitSetAt
    FROM dbo.QueueControl AS c
    WHERE c.[Queue] = @Queue AND c.[Type] = @Row;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Limit_Queue;

    EXIT_ERROR:
    RETURN 1;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Pause_QueueSchedule_trx: pauses a recurring schedule: no scheduler fires it until
   dbo.Resume_QueueSchedule_trx. Jobs it enqueued before are not touched. Pausing a paused
   schedule keeps its first PausedAt and PausedBy.
   @Name: the schedule.
   @PausedBy: who pauses it (the dashboard's or a proxy's user); NULL: ORIGINAL_LOGIN().
   Returns 0 with the schedule's row (dbo.QueueSchedule_V); 1 on error: 735701 inside a
   transaction, 735707 a NULL @Name, 735720 no such schedule. */
CREATE OR ALTER PROCEDURE dbo.Pause_QueueSchedule_trx
    @Name dbo.[Name],
    @PausedBy NVARCHAR(128) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Pause_QueueSchedule_trx';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Pause_QueueSchedule_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Name IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Name is required');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Pause_QueueSchedule;
    UPDATE s
    SET
        PausedAt = ISNULL(s.PausedAt, SYSUTCDATETIME()),
        PausedBy = ISNULL(s.PausedBy, ISNULL(@PausedBy, ORIGINAL_LOGIN()))
    FROM dbo.QueueSchedule AS s
    WHERE s.[Name] = @Name;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt = 0)
        BEGIN
            RAISERROR (735720, 16, 1, @Proc, @Name);
            GOTO EXIT_TRANSACTION;
        END;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Pause_QueueSchedule;

    SELECT
        v.[Name],
        v.[Queue],
        v.[Type],
        v.Payload,
        v.EntityKey,
        v.[Priority],
        v.GroupKey,
        v.CronExpr,
        v.IntervalSeconds,
        v.Misfire,
        v.CatchUpMax,
        v.NextSlotAt,
        v.LastSlotAt,
        v.LastEnqueuedAt,
        v.PausedAt,
        v.PausedBy,
        v.CreatedAt,
        v.CreatedBy
    FROM dbo.QueueSchedule_V AS v
    WHERE v.[Name] = @Name;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Pause_QueueSchedule;

    EXIT_ERROR:
    RETURN 1;
END;
GO

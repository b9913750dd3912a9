SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Resume_QueueSchedule_trx: lets the schedulers fire a paused schedule again (a
   running one is left as it is, but for @NextSlotAt).
   @Name: the schedule.
   @NextSlotAt: the slot to go on from (UTC); NULL: the NextSlotAt it had when paused, so
     that the slots missed meanwhile are misfires, handled by its misfire policy.
     `invoke schedule.resume` gives the first slot from now on: the paused time's slots are
     not enqueued.
   Returns 0 with the schedule's row (dbo.QueueSchedule_V); 1 on error: 735701 inside a
   transaction, 735707 a NULL @Name, 735720 no such schedule. */
CREATE OR ALTER PROCEDURE dbo.Resume_QueueSchedule_trx
    @Name dbo.[Name],
    @NextSlotAt DATETIME2(7) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Resume_QueueSchedule_trx';
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Resume_QueueSchedule_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Name IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Name is required');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Resume_QueueSchedule;
    UPDATE s
    SET
        PausedAt = NULL,
        PausedBy = NULL,
        NextSlotAt = ISNULL(@NextSlotAt, s.NextSlotAt)
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
    COMMIT TRANSACTION Resume_QueueSchedule;

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
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Resume_QueueSchedule;

    EXIT_ERROR:
    RETURN 1;
END;
GO

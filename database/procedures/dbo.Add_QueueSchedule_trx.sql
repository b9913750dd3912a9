SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_QueueSchedule_trx: adds a recurring schedule (dbo.QueueSchedule): a job of @Type
   enqueued into @Queue at every slot of a cron expression or an interval, in UTC. It checks
   what T-SQL can: the queue and type (dbo.QueueScheduleRefusal_fn), the cadence, the
   interval's range, the misfire policy and the job's columns; the cron expression's syntax
   is checked by its caller, which evaluates it (relq.cadence, `invoke schedule.add`), and
   here only that it is not blank.
   @Name: the schedule's name, its key (1 to 128 characters, not blank).
   @Queue: a job queue of this database. @Type: one of its job types.
   @Payload: the job's JSON payload, or NULL.
   @EntityKey: the job's EntityKey; NULL: the schedule's name.
   @Priority: the job's priority (higher is claimed first); NULL: 0.
   @GroupKey: the job's ordered group, or NULL for none.
   @CronExpr: a cron expression (5 fields, or 6 with seconds first), or NULL.
   @IntervalSeconds: or an interval, 1 to 31,622,400 seconds (366 days); exactly one of the two.
   @Misfire: 'Skip' (the default: after a time without schedulers, only the latest missed
     slot is enqueued) or 'CatchUp' (the latest @CatchUpMax missed slots, one job each).
   @CatchUpMax: 1 to 1000 with 'CatchUp'; NULL with 'Skip'.
   @NextSlotAt: the first slot (UTC). Required with @CronExpr (the caller computes it); with
     @IntervalSeconds NULL means now, to the whole second, and the slots follow it every
     @IntervalSeconds.
   @CreatedBy: who adds it (the dashboard's or a proxy's user); NULL: ORIGINAL_LOGIN().
   Returns 0 with the schedule's row (dbo.QueueSchedule_V); 1 on error: 735701 inside a
   transaction, 735707 a missing or invalid parameter (named), 735721 a schedule of that name
   exists, 735722 the queue cannot take jobs of that type. Two callers adding one name at
   the same instant: the second gets 2627 from PK_QueueSchedule. */
CREATE OR ALTER PROCEDURE dbo.Add_QueueSchedule_trx
    @Name NVARCHAR(200),
    @Queue SYSNAME,
    @Type VARCHAR(50),
    @Payload NVARCHAR(MAX) = NULL,
    @EntityKey NVARCHAR(200) = NULL,
    @Priority SMALLINT = NULL,
    @GroupKey NVARCHAR(100) = NULL,
    @CronExpr VARCHAR(200) = NULL,
    @IntervalSeconds INT = NULL,
    @Misfire VARCHAR(10) = 'Skip',
    @CatchUpMax INT = NULL,
    @NextSlotAt DATETIME2(7) = NULL,
    @CreatedBy NVARCHAR(128) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Add_QueueSchedule_trx';
    DECLARE @Why NVARCHAR(200);
    DECLARE @Refusal NVARCHAR(200);
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Add_QueueSchedule_trx');
            GOTO EXIT_ERROR;
        END;
    -- The first problem found, in the order of the parameters.
    SET @Why = CASE
        WHEN @Name IS NULL OR LTRIM(RTRIM(@Name)) = N'' THEN N'@Name is required'
        WHEN LEN(@Name) > 128 THEN N'@Name must be at most 128 characters'
        WHEN @Queue IS NULL THEN N'@Queue is required'
        WHEN @Type IS NULL THEN N'@Type is required'
        WHEN @Payload IS NOT NULL AND ISJSON(@Payload) = 0 THEN N'@Payload is not valid JSON'
        WHEN LTRIM(RTRIM(@EntityKey)) = N'' THEN N'@EntityKey must not be blank: NULL for the name'
        WHEN LTRIM(RTRIM(@GroupKey)) = N'' THEN N'@GroupKey must not be blank: NULL for none'
        WHEN
            (@CronExpr IS NULL AND @IntervalSeconds IS NULL)
            OR (@CronExpr IS NOT NULL AND @IntervalSeconds IS NOT NULL)
            THEN N'give either @CronExpr or @IntervalSeconds, not both or neither'
        WHEN LTRIM(RTRIM(@CronExpr)) = '' THEN N'@CronExpr must not be blank'
        WHEN @IntervalSeconds NOT BETWEEN 1 AND 31622400
            THEN N'@IntervalSeconds must be 1 to 31,622,400 (366 days)'
        WHEN @Misfire IS NULL OR @Misfire NOT IN ('Skip', 'CatchUp') THEN N'@Misfire must be Skip or CatchUp'
        WHEN @Misfire = 'Skip' AND @CatchUpMax IS NOT NULL THEN N'@CatchUpMax is for CatchUp: NULL with Skip'
        WHEN @Misfire = 'CatchUp' AND (@CatchUpMax IS NULL OR @CatchUpMax NOT BETWEEN 1 AND 1000)
            THEN N'@CatchUpMax must be 1 to 1000 with CatchUp'
        WHEN @CronExpr IS NOT NULL AND @NextSlotAt IS NULL
            THEN N'@NextSlotAt is required with @CronExpr: the first slot, computed by the caller'
    END;
    IF (@Why IS NOT NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, @Why);
            GOTO EXIT_ERROR;
        END;
    SET @Refusal = dbo.QueueScheduleRefusal_fn(@Queue, @Type);
    IF (@Refusal IS NOT NULL)
        BEGIN
            RAISERROR (735722, 16, 1, @Proc, @Queue, @Type, @Refusal);
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Add_QueueSchedule;
    IF
        EXISTS (
            SELECT 1 FROM dbo.QueueSchedule AS s WITH (READCOMMITTEDLOCK)
            WHERE s.[Name] = @Name
        )
        BEGIN
            RAISERROR (735721, 16, 1, @Proc, @Name);
            GOTO EXIT_TRANSACTION;
        END;
    INSERT INTO dbo.QueueSchedule (
        [Name], [Queue], [Type], Payload, EntityKey, [Priority], GroupKey, CronExpr, IntervalSeconds,
        Misfire, CatchUpMax, NextSlotAt, CreatedBy
    )
    VALUES (
        @Name,
        @Queue,
        @Type,
        @Payload,
        ISNULL(@EntityKey, @Name),
        ISNULL(@Priority, 0),
        @GroupKey,
        @CronExpr,
        @IntervalSeconds,
        @Misfire,
        @CatchUpMax,
        -- now, cut to the whole second (the text of style 126 without its fraction)
        ISNULL(@NextSlotAt, CONVERT(DATETIME2(7), CONVERT(CHAR(19), SYSUTCDATETIME(), 126))),
        ISNULL(@CreatedBy, ORIGINAL_LOGIN())
    );
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt <> 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_TRANSACTION;
        END;
    COMMIT TRANSACTION Add_QueueSchedule;

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
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Add_QueueSchedule;

    EXIT_ERROR:
    RETURN 1;
END;
GO

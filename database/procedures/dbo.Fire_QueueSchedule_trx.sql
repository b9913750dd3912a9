SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Fire_QueueSchedule_trx: enqueues one slot of a recurring schedule (dbo.QueueSchedule),
   exactly once however many schedulers call it for that slot, with no leader among them.
   In one transaction it moves the schedule from the slot the caller read as due (@DueAt) to
   @NextSlotAt only if NextSlotAt still equals @DueAt (a compare-and-set), and, when it did,
   enqueues the schedule's job through the queue's dbo.Add_<Queue>_utx with the DedupKey
   'schedule:<Name>@<SlotAt>'. A caller that finds the schedule moved on (another scheduler
   fired the slot), or paused, gets Fired = 0 and no error.
   Why it holds: the UPDATE reads the schedule's row by its key with an update (U) lock and
   changes it under an exclusive (X) lock held to the end of the transaction, also under
   READ_COMMITTED_SNAPSHOT: "the selection of rows to update is done using a blocking scan
   where an update (U) lock is acquired on the data row as data values are read"
   (https://learn.microsoft.com/sql/relational-databases/sql-server-transaction-locking-and-
   row-versioning-guide, "Modify data without optimized locking"). A second scheduler's
   UPDATE of the same row waits for the first's commit, then reads the committed NextSlotAt,
   which no longer equals @DueAt: no row qualifies. With optimized locking (SQL Server 2025,
   Azure SQL) the predicate is evaluated on the latest committed version and, when the row
   changed meanwhile, evaluated again under the lock
   (https://learn.microsoft.com/sql/relational-databases/performance/optimized-locking, "Lock
   after qualification"). READCOMMITTEDLOCK keeps the locking read whatever the database's
   options (https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table). The
   session runs READ COMMITTED here, so a caller's SNAPSHOT level does not turn the lost race
   into an update conflict (3960). The enqueue commits or rolls back with the schedule's
   move: a failed enqueue leaves the slot due for the next try. The DedupKey is a second
   guard: while the slot's job is unfinished, the same slot enqueued again would be a
   duplicate of it (dbo.Add_<Queue>_utx).
   @Name: the schedule. @DueAt: its NextSlotAt as the caller read it (the compare).
   @SlotAt: the slot to enqueue, from @DueAt (the due slot) on: a later one when the caller
     skips missed slots (its misfire policy, relq.cadence); not in the future.
   @NextSlotAt: the slot after @SlotAt, which the schedule moves to; later than @SlotAt.
   Returns 0 with one row: Fired (1: this call enqueued the slot; 0: the schedule had moved on
   or is paused), Name, SlotAt, NextSlotAt (the schedule's next slot now), EnqueuedAt (the
   job's key; NULL when not fired) and IsDuplicate (1: an unfinished job with the slot's
   DedupKey was there already). 1 on error: 735701 inside a transaction, 735707 a missing or
   inconsistent parameter, 735720 no such schedule, 735722 its queue cannot take its jobs,
   and the errors of dbo.Add_<Queue>_utx (735707 a bad job, 735709). */
CREATE OR ALTER PROCEDURE dbo.Fire_QueueSchedule_trx
    @Name dbo.[Name],
    @DueAt DATETIME2(7),
    @SlotAt DATETIME2(7),
    @NextSlotAt DATETIME2(7)
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- relq's locking hints assume READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Fire_QueueSchedule_trx';
    DECLARE @Fired BIT = 0;
    DECLARE @Queue SYSNAME;
    DECLARE @Type VARCHAR(50);
    DECLARE @Refusal NVARCHAR(200);
    DECLARE @DedupKey NVARCHAR(200);
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @IsDuplicate BIT;
    DECLARE @Now DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Schedule TABLE (
        [Queue] SYSNAME NOT NULL,
        [Type] VARCHAR(50) NOT NULL,
        Payload NVARCHAR(MAX) NULL,
        EntityKey NVARCHAR(200) NOT NULL,
        [Priority] SMALLINT NOT NULL,
        GroupKey NVARCHAR(100) NULL
    );
    DECLARE @SyncQueueItems dbo.SyncQueueItemList;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (735701, 16, 1, N'dbo.Fire_QueueSchedule_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Name IS NULL OR @DueAt IS NULL OR @SlotAt IS NULL OR @NextSlotAt IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Name, @DueAt, @SlotAt and @NextSlotAt are required');
            GOTO EXIT_ERROR;
        END;
    IF (@SlotAt < @DueAt)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@SlotAt must not be before @DueAt: earlier slots are enqueued');
            GOTO EXIT_ERROR;
        END;
    IF (@NextSlotAt <= @SlotAt)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@NextSlotAt must be later than @SlotAt');
            GOTO EXIT_ERROR;
        END;
    IF (@SlotAt > SYSUTCDATETIME())
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@SlotAt is in the future: a slot is enqueued once it is due');
            GOTO EXIT_ERROR;
        END;

    BEGIN TRANSACTION Fire_QueueSchedule;
    -- The compare-and-set: the row's lock decides which scheduler fires the slot (header).
    UPDATE s
    SET
        NextSlotAt = @NextSlotAt,
        LastSlotAt = @SlotAt
    OUTPUT
        INSERTED.[Queue],
        INSERTED.[Type],
        INSERTED.Payload,
        INSERTED.EntityKey,
        INSERTED.[Priority],
        INSERTED.GroupKey
    INTO @Schedule ([Queue], [Type], Payload, EntityKey, [Priority], GroupKey)
    FROM dbo.QueueSchedule AS s WITH (READCOMMITTEDLOCK)
    WHERE
        s.[Name] = @Name
        AND s.NextSlotAt = @DueAt
        AND s.PausedAt IS NULL;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
    IF (@RowCnt > 1)
        BEGIN
            RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
            GOTO EXIT_TRANSACTION;
        END;

    IF (@RowCnt = 1)
        BEGIN
            SELECT
                @Queue = sc.[Queue],
                @Type = sc.[Type]
            FROM @Schedule AS sc;
            SET @Refusal = dbo.QueueScheduleRefusal_fn(@Queue, @Type);
            IF (@Refusal IS NOT NULL)
                BEGIN
                    RAISERROR (735722, 16, 1, @Proc, @Queue, @Type, @Refusal);
                    GOTO EXIT_TRANSACTION;
                END;
            -- ISO 8601 (style 126), the same text whatever the session's language.
            SET @DedupKey = N'schedule:' + @Name + N'@' + CONVERT(NVARCHAR(27), @SlotAt, 126);
            IF (@Queue = N'SyncQueue')
                BEGIN
                    INSERT INTO @SyncQueueItems (
                        ItemNo, [Type], EntityKey, Payload, [Priority], GroupKey, DedupKey
                    )
                    SELECT
                        0 AS ItemNo,
                        sc.[Type],
                        sc.EntityKey,
                        sc.Payload,
                        sc.[Priority],
                        sc.GroupKey,
                        @DedupKey AS DedupKey
                    FROM @Schedule AS sc;
                    SELECT
                        @RowCnt = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                    EXEC @RetCode = dbo.Add_SyncQueue_utx
                        @Items = @SyncQueueItems,
                        @Enqueued = @Enqueued OUTPUT;
                    SELECT @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0 OR @RetCode <> 0) GOTO EXIT_TRANSACTION;
                END;
            SELECT
                @EnqueuedAt = e.EnqueuedAt,
                @IsDuplicate = e.IsDuplicate
            FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS e;
            IF (@EnqueuedAt IS NULL)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, 0);
                    GOTO EXIT_TRANSACTION;
                END;
            UPDATE s
            SET LastEnqueuedAt = @EnqueuedAt
            FROM dbo.QueueSchedule AS s
            WHERE s.[Name] = @Name;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            IF (@RowCnt <> 1)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, 1, @RowCnt);
                    GOTO EXIT_TRANSACTION;
                END;
            SELECT
                @Fired = 1,
                @Now = @NextSlotAt;
        END;
    ELSE
        BEGIN
            -- Moved on by another scheduler, or paused: where it is now, for the caller.
            SELECT @Now = s.NextSlotAt
            FROM dbo.QueueSchedule AS s WITH (READCOMMITTEDLOCK)
            WHERE s.[Name] = @Name;
            IF (@Now IS NULL)
                BEGIN
                    RAISERROR (735720, 16, 1, @Proc, @Name);
                    GOTO EXIT_TRANSACTION;
                END;
        END;
    COMMIT TRANSACTION Fire_QueueSchedule;

    -- From the call's own variables: one row, even when the schedule is removed just after.
    SELECT
        @Fired AS Fired,
        @Name AS [Name],
        @SlotAt AS SlotAt,
        @Now AS NextSlotAt,
        @EnqueuedAt AS EnqueuedAt,
        @IsDuplicate AS IsDuplicate;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Fire_QueueSchedule;

    EXIT_ERROR:
    RETURN 1;
END;
GO

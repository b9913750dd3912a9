SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Fire_QueueSchedule_trxTests';
GO
-- dbo.Fire_QueueSchedule_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked tables back after each).
-- The schedules and SyncQueue faked, with a job type of the tests' own, and one schedule, beat:
-- every 60 s from 2024-01-01T00:00:00, due.
CREATE PROCEDURE Fire_QueueSchedule_trxTests.Arrange
    @Type VARCHAR(50) = 'FireTestJob'
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('FireTestJob');
    INSERT INTO dbo.QueueSchedule (
        [Name], [Queue], [Type], Payload, EntityKey, [Priority], IntervalSeconds, Misfire, NextSlotAt, CreatedBy
    )
    VALUES (N'beat', N'SyncQueue', @Type, N'{"n":1}', N'E-1', 3, 60, 'Skip', '2024-01-01T00:00:00', N'admin');
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Fire_QueueSchedule_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- Fires beat, asserts the error it raised and that the schedule did not move and no job came.
CREATE PROCEDURE Fire_QueueSchedule_trxTests.AssertRefused
    @Expected INT,
    @Name NVARCHAR(128) = N'beat',
    @DueAt DATETIME2(7) = '2024-01-01T00:00:00',
    @SlotAt DATETIME2(7) = '2024-01-01T00:00:00',
    @NextSlotAt DATETIME2(7) = '2024-01-01T00:01:00'
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Jobs INT;
    DECLARE @Unmoved INT;
    BEGIN TRY
        EXEC dbo.Fire_QueueSchedule_trx @Name = @Name, @DueAt = @DueAt, @SlotAt = @SlotAt, @NextSlotAt = @NextSlotAt;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    SELECT @Jobs = COUNT(*) FROM dbo.SyncQueue;
    SELECT @Unmoved = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND NextSlotAt = '2024-01-01T00:00:00' AND LastSlotAt IS NULL;
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Jobs, @Message = N'no job must be enqueued';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unmoved, @Message = N'the schedule must not move';
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Fire_QueueSchedule_trxTests.Arrange;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Fire_QueueSchedule_trx
        @Name = N'beat',
        @DueAt = '2024-01-01T00:00:00',
        @SlotAt = '2024-01-01T00:00:00',
        @NextSlotAt = '2024-01-01T00:01:00';
END;
GO
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx enqueues the slot and moves the schedule when the slot is due]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Jobs INT;
    DECLARE @Job INT;
    DECLARE @Moved INT;
    EXEC Fire_QueueSchedule_trxTests.Arrange;

    EXEC @RetCode = dbo.Fire_QueueSchedule_trx
        @Name = N'beat',
        @DueAt = '2024-01-01T00:00:00',
        @SlotAt = '2024-01-01T00:00:00',
        @NextSlotAt = '2024-01-01T00:01:00';
    SET @TranCount = @@TRANCOUNT;

    SELECT @Jobs = COUNT(*) FROM dbo.SyncQueue;
    SELECT @Job = COUNT(*) FROM dbo.SyncQueue AS q
    WHERE
        q.[Type] = 'FireTestJob' AND q.EntityKey = N'E-1' AND q.Payload = N'{"n":1}' AND q.[Priority] = 3
        AND q.GroupKey IS NULL AND q.[Status] = 'Pending'
        AND q.DedupKey LIKE N'schedule:beat@2024-01-01T00:00:00%';
    SELECT @Moved = COUNT(*) FROM dbo.QueueSchedule AS s
    INNER JOIN dbo.SyncQueue AS q ON s.LastEnqueuedAt = q.EnqueuedAt
    WHERE s.[Name] = N'beat' AND s.NextSlotAt = '2024-01-01T00:01:00' AND s.LastSlotAt = '2024-01-01T00:00:00';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Jobs;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Job, @Message = N'the job carries the schedule''s columns';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Moved, @Message = N'the schedule moves to the next slot';
END;
GO
-- Two schedulers that read the same due slot: the second call finds NextSlotAt moved on.
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx enqueues nothing and raises nothing when the slot was fired]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Jobs INT;
    DECLARE @Moved INT;
    EXEC Fire_QueueSchedule_trxTests.Arrange;
    EXEC dbo.Fire_QueueSchedule_trx
        @Name = N'beat',
        @DueAt = '2024-01-01T00:00:00',
        @SlotAt = '2024-01-01T00:00:00',
        @NextSlotAt = '2024-01-01T00:01:00';

    EXEC @RetCode = dbo.Fire_QueueSchedule_trx
        @Name = N'beat',
        @DueAt = '2024-01-01T00:00:00',
        @SlotAt = '2024-01-01T00:00:00',
        @NextSlotAt = '2024-01-01T00:01:00';

    SELECT @Jobs = COUNT(*) FROM dbo.SyncQueue;
    SELECT @Moved = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND NextSlotAt = '2024-01-01T00:01:00';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Jobs, @Message = N'the slot is enqueued once';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Moved;
END;
GO
-- Skip: the first fire after a time without schedulers enqueues a later slot than the due one.
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx enqueues the later slot when the caller skips missed ones]
AS
BEGIN
    DECLARE @Job INT;
    DECLARE @Moved INT;
    EXEC Fire_QueueSchedule_trxTests.Arrange;

    EXEC dbo.Fire_QueueSchedule_trx
        @Name = N'beat',
        @DueAt = '2024-01-01T00:00:00',
        @SlotAt = '2024-01-01T00:10:00',
        @NextSlotAt = '2024-01-01T00:11:00';

    SELECT @Job = COUNT(*) FROM dbo.SyncQueue
    WHERE DedupKey LIKE N'schedule:beat@2024-01-01T00:10:00%';
    SELECT @Moved = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND NextSlotAt = '2024-01-01T00:11:00' AND LastSlotAt = '2024-01-01T00:10:00';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Job;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Moved;
END;
GO
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx enqueues nothing when the schedule is paused]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Jobs INT;
    EXEC Fire_QueueSchedule_trxTests.Arrange;
    UPDATE dbo.QueueSchedule SET
        PausedAt = '2023-12-31T00:00:00',
        PausedBy = N'ops'
    WHERE [Name] = N'beat';

    EXEC @RetCode = dbo.Fire_QueueSchedule_trx
        @Name = N'beat',
        @DueAt = '2024-01-01T00:00:00',
        @SlotAt = '2024-01-01T00:00:00',
        @NextSlotAt = '2024-01-01T00:01:00';

    SELECT @Jobs = COUNT(*) FROM dbo.SyncQueue;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Jobs;
END;
GO
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx raises 735720 when no schedule has the name]
AS
BEGIN
    EXEC Fire_QueueSchedule_trxTests.Arrange;

    EXEC Fire_QueueSchedule_trxTests.AssertRefused @Expected = 735720, @Name = N'nope';
END;
GO
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx raises 735707 when the slots are out of order]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @Latest DATETIME2(7) = DATEADD(MINUTE, 6, SYSUTCDATETIME());
    EXEC Fire_QueueSchedule_trxTests.Arrange;

    -- a slot before the due one
    EXEC Fire_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @SlotAt = '2023-12-31T23:59:00';
    -- a next slot not after the slot
    EXEC Fire_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @NextSlotAt = '2024-01-01T00:00:00';
    -- a slot in the future
    EXEC Fire_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @SlotAt = @Later, @NextSlotAt = @Latest;
    EXEC Fire_QueueSchedule_trxTests.AssertRefused @Expected = 735707, @DueAt = NULL;
END;
GO
-- The enqueue fails: the schedule's move rolls back with it, so the slot stays due.
--[@tSQLt:NoTransaction]('Fire_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Fire_QueueSchedule_trxTests.[test Fire_QueueSchedule_trx raises 735722 and moves nothing when the type is no longer one of the queue types]
AS
BEGIN
    EXEC Fire_QueueSchedule_trxTests.Arrange @Type = 'GoneJob';

    EXEC Fire_QueueSchedule_trxTests.AssertRefused @Expected = 735722;
END;
GO

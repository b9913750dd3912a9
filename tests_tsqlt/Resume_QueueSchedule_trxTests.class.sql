SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Resume_QueueSchedule_trxTests';
GO
-- dbo.Resume_QueueSchedule_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked table back after each).
-- A paused schedule, beat, whose next slot passed while it was paused.
CREATE PROCEDURE Resume_QueueSchedule_trxTests.AddSchedule
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule';
    INSERT INTO dbo.QueueSchedule (
        [Name], [Queue], [Type], EntityKey, IntervalSeconds, Misfire, NextSlotAt, PausedAt, PausedBy, CreatedBy
    )
    VALUES (
        N'beat', N'SyncQueue', 'CustomerSync', N'beat', 5, 'Skip', '2024-01-01T00:00:00', '2024-01-01T00:00:01',
        N'ops', N'admin'
    );
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Resume_QueueSchedule_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Resume_QueueSchedule_trxTests.[test Resume_QueueSchedule_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Resume_QueueSchedule_trxTests.AddSchedule;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Resume_QueueSchedule_trx @Name = N'beat';
END;
GO
--[@tSQLt:NoTransaction]('Resume_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Resume_QueueSchedule_trxTests.[test Resume_QueueSchedule_trx clears the pause and moves to the slot when one is given]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Matching INT;
    EXEC Resume_QueueSchedule_trxTests.AddSchedule;

    EXEC @RetCode = dbo.Resume_QueueSchedule_trx @Name = N'beat', @NextSlotAt = '2024-06-01T00:00:00';

    SELECT @Matching = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND PausedAt IS NULL AND PausedBy IS NULL AND NextSlotAt = '2024-06-01T00:00:00';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching;
END;
GO
--[@tSQLt:NoTransaction]('Resume_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Resume_QueueSchedule_trxTests.[test Resume_QueueSchedule_trx keeps the next slot when none is given]
AS
BEGIN
    DECLARE @Matching INT;
    EXEC Resume_QueueSchedule_trxTests.AddSchedule;

    EXEC dbo.Resume_QueueSchedule_trx @Name = N'beat';

    SELECT @Matching = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND PausedAt IS NULL AND NextSlotAt = '2024-01-01T00:00:00';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching;
END;
GO
--[@tSQLt:NoTransaction]('Resume_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Resume_QueueSchedule_trxTests.[test Resume_QueueSchedule_trx raises 735720 when no schedule has the name]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Resume_QueueSchedule_trxTests.AddSchedule;

    BEGIN TRY
        EXEC dbo.Resume_QueueSchedule_trx @Name = N'nope';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735720, @Actual = @ErrorNumber;
END;
GO

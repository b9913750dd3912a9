SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Pause_QueueSchedule_trxTests';
GO
-- dbo.Pause_QueueSchedule_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked table back after each).
-- Two running schedules, beat and other.
CREATE PROCEDURE Pause_QueueSchedule_trxTests.AddSchedules
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueSchedule';
    INSERT INTO dbo.QueueSchedule ([Name], [Queue], [Type], EntityKey, IntervalSeconds, Misfire, NextSlotAt, CreatedBy)
    VALUES
    (N'beat', N'SyncQueue', 'CustomerSync', N'beat', 5, 'Skip', '2024-01-01T00:00:00', N'admin'),
    (N'other', N'SyncQueue', 'CustomerSync', N'other', 5, 'Skip', '2024-01-01T00:00:00', N'admin');
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Pause_QueueSchedule_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Pause_QueueSchedule_trxTests.[test Pause_QueueSchedule_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Pause_QueueSchedule_trxTests.AddSchedules;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Pause_QueueSchedule_trx @Name = N'beat';
END;
GO
--[@tSQLt:NoTransaction]('Pause_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_QueueSchedule_trxTests.[test Pause_QueueSchedule_trx pauses that schedule alone saying who when it runs]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Paused INT;
    DECLARE @Others INT;
    EXEC Pause_QueueSchedule_trxTests.AddSchedules;

    EXEC @RetCode = dbo.Pause_QueueSchedule_trx @Name = N'beat', @PausedBy = N'ops';

    SELECT @Paused = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND PausedAt IS NOT NULL AND PausedBy = N'ops';
    SELECT @Others = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'other' AND PausedAt IS NULL AND PausedBy IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Paused;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Others;
END;
GO
--[@tSQLt:NoTransaction]('Pause_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_QueueSchedule_trxTests.[test Pause_QueueSchedule_trx keeps the first pause when it is paused already]
AS
BEGIN
    DECLARE @Kept INT;
    EXEC Pause_QueueSchedule_trxTests.AddSchedules;
    UPDATE dbo.QueueSchedule SET
        PausedAt = '2024-01-02T00:00:00',
        PausedBy = N'first'
    WHERE [Name] = N'beat';

    EXEC dbo.Pause_QueueSchedule_trx @Name = N'beat', @PausedBy = N'second';

    SELECT @Kept = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND PausedAt = '2024-01-02T00:00:00' AND PausedBy = N'first';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Kept;
END;
GO
--[@tSQLt:NoTransaction]('Pause_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_QueueSchedule_trxTests.[test Pause_QueueSchedule_trx records the login when no one is named]
AS
BEGIN
    DECLARE @Matching INT;
    EXEC Pause_QueueSchedule_trxTests.AddSchedules;

    EXEC dbo.Pause_QueueSchedule_trx @Name = N'beat';

    SELECT @Matching = COUNT(*) FROM dbo.QueueSchedule
    WHERE [Name] = N'beat' AND PausedBy = ORIGINAL_LOGIN();
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Matching;
END;
GO
--[@tSQLt:NoTransaction]('Pause_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Pause_QueueSchedule_trxTests.[test Pause_QueueSchedule_trx raises 735720 when no schedule has the name]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Pause_QueueSchedule_trxTests.AddSchedules;

    BEGIN TRY
        EXEC dbo.Pause_QueueSchedule_trx @Name = N'nope';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735720, @Actual = @ErrorNumber;
END;
GO

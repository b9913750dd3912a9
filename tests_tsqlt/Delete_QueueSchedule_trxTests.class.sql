SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Delete_QueueSchedule_trxTests';
GO
-- dbo.Delete_QueueSchedule_trx owns its transaction, so its tests but the first run as
-- NoTransaction tests (tSQLt puts the faked table back after each).
-- Two schedules, beat and other.
CREATE PROCEDURE Delete_QueueSchedule_trxTests.AddSchedules
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
CREATE PROCEDURE Delete_QueueSchedule_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Delete_QueueSchedule_trxTests.[test Delete_QueueSchedule_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Delete_QueueSchedule_trxTests.AddSchedules;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Delete_QueueSchedule_trx @Name = N'beat';
END;
GO
--[@tSQLt:NoTransaction]('Delete_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Delete_QueueSchedule_trxTests.[test Delete_QueueSchedule_trx removes that schedule alone when it exists]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @Left NVARCHAR(400);
    EXEC Delete_QueueSchedule_trxTests.AddSchedules;

    EXEC @RetCode = dbo.Delete_QueueSchedule_trx @Name = N'beat';

    SELECT @Left = STRING_AGG([Name], N',') FROM dbo.QueueSchedule;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEqualsString @Expected = N'other', @Actual = @Left;
END;
GO
--[@tSQLt:NoTransaction]('Delete_QueueSchedule_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Delete_QueueSchedule_trxTests.[test Delete_QueueSchedule_trx raises 735720 when no schedule has the name]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Rows INT;
    EXEC Delete_QueueSchedule_trxTests.AddSchedules;

    BEGIN TRY
        EXEC dbo.Delete_QueueSchedule_trx @Name = N'nope';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT @Rows = COUNT(*) FROM dbo.QueueSchedule;
    EXEC tSQLt.AssertEquals @Expected = 735720, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows;
END;
GO

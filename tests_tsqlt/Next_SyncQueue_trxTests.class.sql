SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_SyncQueue_trxTests';
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx raises 50001 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Next_SyncQueue_trx;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Next_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx claims and commits the due item when one is Pending]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @StartedAt dbo.[_Timestamp];
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (@Key, 'CustomerSync', N'C-1', 'Pending', NULL, 0, NULL, DATEADD(MINUTE, -5, @Now), @OldToken);

    EXEC @RetCode = dbo.Next_SyncQueue_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @UpdatedAt = q.UpdatedAt,
        @StartedAt = q.StartedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum;
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @OldToken
        EXEC tSQLt.Fail @Message0 = N'the claim must move the token forward';
    IF @StartedAt IS NULL
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt';
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx returns 0 and changes nothing when nothing is due]
AS
BEGIN
    DECLARE @Later dbo.[_Timestamp] = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @OldToken dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES ('2024-01-01T00:00:01', 'CustomerSync', N'C-1', 'Pending', NULL, 0, NULL, @Later, @OldToken);

    EXEC @RetCode = dbo.Next_SyncQueue_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables
    -- (AssertEqualsTable creates a work table).
    DECLARE @Unchanged INT = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE
            q.[Status] = 'Pending'
            AND q.AttemptNum = 0
            AND q.StartedAt IS NULL
            AND q.UpdatedAt = @OldToken
    );
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unchanged;
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Next_SyncQueue_trx;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
END;
GO

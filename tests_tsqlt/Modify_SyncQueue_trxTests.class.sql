SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_SyncQueue_trxTests';
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx raises 50001 when a transaction is open]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Modify_SyncQueue_trx
        @EnqueuedAt = '2024-01-01T00:00:01',
        @UpdatedAt = '2024-01-01T00:00:05',
        @Status = 'Completed';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx completes and commits when Completed is reported]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @UpdatedAt dbo.[_Timestamp];
    DECLARE @Duration BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- the report reads and ends the item's attempt: the history must be the test's own
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );

    EXEC @RetCode = dbo.Modify_SyncQueue_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'{"synced":true}';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT
        @Status = q.[Status],
        @Response = q.Response,
        @UpdatedAt = q.UpdatedAt,
        @Duration = q.Duration
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status;
    EXEC tSQLt.AssertEqualsString @Expected = N'{"synced":true}', @Actual = @Response;
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the report must move the token forward';
    IF @Duration IS NULL
        EXEC tSQLt.Fail @Message0 = N'a finished attempt must record its Duration';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs and its return code is never seen: the test rolls back itself.
--[@tSQLt:NoTransaction]('Modify_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx leaves the item unchanged when the token is stale]
AS
BEGIN
    DECLARE @Now dbo.[_Timestamp] = SYSUTCDATETIME();
    DECLARE @Key dbo.[_Timestamp] = '2024-01-01T00:00:01';
    DECLARE @Token dbo.[_Timestamp] = '2024-01-01T00:00:05';
    DECLARE @ErrorNumber INT;
    DECLARE @Unchanged INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    -- the report reads and ends the item's attempt: the history must be the test's own
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt, [Type], EntityKey, [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt
    )
    VALUES (
        @Key, 'CustomerSync', N'C-1', 'Processing', 'Fetch', 1, DATEADD(SECOND, -2, @Now), DATEADD(MINUTE, -5, @Now),
        @Token
    );
    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = '2024-01-01T00:00:04',
            @Status = 'Completed',
            @Response = N'{"synced":true}';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- The row as the failed call left it, seen from inside the transaction it left open.
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables
    -- (AssertEqualsTable creates a work table).
    SET @Unchanged = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE
            q.EnqueuedAt = @Key
            AND q.[Status] = 'Processing'
            AND q.[Step] = 'Fetch'
            AND q.AttemptNum = 1
            AND q.Response = N''
            AND q.Duration IS NULL
            AND q.UpdatedAt = @Token
    );
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50005, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unchanged;
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Modify_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_trx
            @EnqueuedAt = '2024-01-01T00:00:01',
            @UpdatedAt = '2024-01-01T00:00:05',
            @Status = 'Completed';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
END;
GO

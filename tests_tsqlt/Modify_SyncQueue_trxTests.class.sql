SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_SyncQueue_trxTests';
GO
-- Every table the report writes (the attempt history included) and its result
-- row (dbo.Worker_SyncQueue_V) reads, and the settings faked empty so that
-- syncqueue.maxAttempts is 3. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
-- dbo.QueueStatus and dbo.QueueTransition stay real.
-- The result row cannot be captured here: INSERT ... EXEC runs the procedure inside
-- the INSERT's transaction, where a _trx refuses (735701). So the tests assert on the
-- rows the call left, and read its columns with sys.dm_exec_describe_first_result_set;
-- the rules of each report are dbo.Modify_SyncQueue_utx's tests.
CREATE PROCEDURE Modify_SyncQueue_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- The item under test: key 2024-01-01T00:00:01, token four seconds later, in
-- Processing on its first attempt (step Fetch), claimed by worker-1 five seconds ago.
CREATE PROCEDURE Modify_SyncQueue_trxTests.AddClaimedItem
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @StartedAt DATETIME2(7) = DATEADD(SECOND, -5, SYSUTCDATETIME());
    DECLARE @LeaseUntil DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        Payload,
        [Status],
        [Step],
        AttemptNum,
        Response,
        Error,
        StartedAt,
        Duration,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        GroupKey,
        DedupKey,
        LockedBy,
        LeaseUntil
    )
    VALUES (
        @Key,
        'CustomerSync',
        N'C-1',
        NULL,
        'Processing',
        'Fetch',
        1,
        N'',
        N'',
        @StartedAt,
        NULL,
        @Key,
        @Token,
        0,
        NULL,
        NULL,
        N'worker-1',
        @LeaseUntil
    );
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    EXEC Modify_SyncQueue_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_trxTests.AddClaimedItem;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Modify_SyncQueue_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed';
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx completes the item and commits when a processing item reports Completed]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_SyncQueue_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_trxTests.AddClaimedItem;

    EXEC @RetCode = dbo.Modify_SyncQueue_trx
        @EnqueuedAt = @Key,
        @UpdatedAt = @Token,
        @Status = 'Completed',
        @Response = N'200 OK';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = q.[Status],
        @Response = q.Response,
        @Duration = q.Duration,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'200 OK', @Actual = @Response, @Message = N'Response';
    IF @Duration IS NULL OR @Duration < 0
        EXEC tSQLt.Fail @Message0 = N'the ended attempt must record its Duration';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Token
        EXEC tSQLt.Fail @Message0 = N'the report must move UpdatedAt forward';
END;
GO
-- The error leaves the procedure at its RAISERROR (tSQLt runs tests inside TRY...CATCH), so the
-- _trx's own rollback never runs and its return code is never seen: the test rolls back itself,
-- after reading the row. A NoTransaction test makes no permanent objects, so it asserts values,
-- not tables (AssertEqualsTable creates a work table).
--[@tSQLt:NoTransaction]('Modify_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx raises 735705 and leaves the item unchanged when the token is stale]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @StaleToken DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @AttemptNum INT;
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Duration BIGINT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_SyncQueue_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_trxTests.AddClaimedItem;

    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @StaleToken,
            @Status = 'Completed',
            @Response = N'200 OK';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    -- the row as the failed call left it, seen from inside the transaction it left open
    SELECT
        @Status = q.[Status],
        @Step = q.[Step],
        @AttemptNum = q.AttemptNum,
        @Response = q.Response,
        @Duration = q.Duration,
        @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Fetch', @Actual = @Step, @Message = N'Step';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Response, @Message = N'Response';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Duration, @Message = N'Duration';
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'UpdatedAt';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Modify_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Modify_SyncQueue_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_trxTests.AddClaimedItem;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_trx
            @EnqueuedAt = @Key,
            @UpdatedAt = @Token,
            @Status = 'Completed';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT
        @Status = q.[Status],
        @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Modify_SyncQueue_trxTests.[test Modify_SyncQueue_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'EnqueuedAt, Type, EntityKey, Payload, Status, Step, AttemptNum, ScheduledFor, '
        + N'StartedAt, UpdatedAt, LeaseUntil, Response, Error';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'EXEC dbo.Modify_SyncQueue_trx @EnqueuedAt = NULL, @UpdatedAt = NULL, @Status = NULL;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_SyncQueue_trxTests';
GO
-- Every table the claim writes (the attempt history included: its foreign key would
-- refuse the rows of a faked queue) and its result rows (dbo.Worker_SyncQueue_V) read,
-- the tables the view joins among them, and the settings faked empty so that
-- syncqueue.maxAttempts is 3 and syncqueue.leaseSeconds 300. In a NoTransaction test
-- the fakes hold the committed rows; tSQLt puts the real tables back after the test.
--
-- The result set cannot be captured here: INSERT ... EXEC runs the procedure inside
-- the INSERT's transaction, where a _trx refuses (735701). The tests check its columns
-- with sys.dm_exec_describe_first_result_set and assert on the rows the claim left.
CREATE PROCEDURE Next_SyncQueue_trxTests.FakeQueue
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueueAttempt', @ConstraintName = N'PK_SyncQueueAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl'; -- no pause, no limit, whatever the database holds
END;
GO
-- The sync job types, faked with two of the tests' own (AddTestJobA and AddTestJobB),
-- for the tests of @Type: the claim refuses a @Type that dbo.SyncQueueType does not list.
CREATE PROCEDURE Next_SyncQueue_trxTests.FakeTypes
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('AddTestJobA'), ('AddTestJobB');
END;
GO
-- One due, Pending sync job with every column the claim reads.
CREATE PROCEDURE Next_SyncQueue_trxTests.AddDueItem
    @EnqueuedAt DATETIME2(7),
    @Type VARCHAR(50) = 'CustomerSync'
AS
BEGIN
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        [Status],
        [Step],
        AttemptNum,
        StartedAt,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        GroupKey,
        LockedBy,
        LeaseUntil
    )
    VALUES (
        @EnqueuedAt,
        @Type,
        N'C-1',
        'Pending',
        NULL,
        0,
        NULL,
        @EnqueuedAt,
        @EnqueuedAt,
        0,
        NULL,
        NULL,
        NULL
    );
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Next_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Next_SyncQueue_trxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Next_SyncQueue_trx;
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx claims and commits the due item when no transaction is open]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LockedBy NVARCHAR(128);
    DECLARE @StartedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @ExpectedLease DATETIME2(7);
    DECLARE @AttemptStartedAt DATETIME2(7);
    DECLARE @AttemptLockedBy NVARCHAR(128);
    DECLARE @Attempts INT;
    EXEC Next_SyncQueue_trxTests.FakeQueue;
    EXEC Next_SyncQueue_trxTests.AddDueItem @EnqueuedAt = @Key;

    EXEC @RetCode = dbo.Next_SyncQueue_trx @LockedBy = N'worker-1';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @UpdatedAt = q.UpdatedAt,
        @LockedBy = q.LockedBy,
        @StartedAt = q.StartedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertEqualsString @Expected = N'worker-1', @Actual = @LockedBy, @Message = N'LockedBy';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @Key
        EXEC tSQLt.Fail @Message0 = N'the claim must move the token forward';
    IF @StartedAt IS NULL
        EXEC tSQLt.Fail @Message0 = N'the claim must set StartedAt';
    SET @ExpectedLease = DATEADD(SECOND, 300, @StartedAt);
    EXEC tSQLt.AssertEquals @Expected = @ExpectedLease, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
    SELECT
        @Attempts = COUNT(*),
        @AttemptStartedAt = MAX(a.StartedAt),
        @AttemptLockedBy = MAX(a.LockedBy)
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key AND a.Outcome IS NULL;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Attempts, @Message = N'open attempts';
    EXEC tSQLt.AssertEquals
        @Expected = @UpdatedAt, @Actual = @AttemptStartedAt, @Message = N'the attempt starts at the new token';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'worker-1', @Actual = @AttemptLockedBy, @Message = N'the attempt''s LockedBy';
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx returns 0 and changes nothing when nothing is due]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @OldToken DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Unchanged INT;
    DECLARE @Attempts INT;
    EXEC Next_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        [Status],
        [Step],
        AttemptNum,
        StartedAt,
        ScheduledFor,
        UpdatedAt
    )
    VALUES (
        '2024-01-01T00:00:01',
        'CustomerSync',
        N'C-1',
        'Pending',
        NULL,
        0,
        NULL,
        @Later,
        @OldToken
    );

    EXEC @RetCode = dbo.Next_SyncQueue_trx;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables
    -- (AssertEqualsTable creates a work table).
    SET @Unchanged = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE
            q.[Status] = 'Pending'
            AND q.AttemptNum = 0
            AND q.StartedAt IS NULL
            AND q.LockedBy IS NULL
            AND q.LeaseUntil IS NULL
            AND q.UpdatedAt = @OldToken
    );
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unchanged, @Message = N'the item is unchanged';
    SELECT @Attempts = COUNT(*) FROM dbo.SyncQueueAttempt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx claims only items of that type when Type is given]
AS
BEGIN
    DECLARE @FirstKey DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @SecondKey DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @RetCode INT;
    DECLARE @FirstStatus VARCHAR(20);
    DECLARE @SecondStatus VARCHAR(20);
    EXEC Next_SyncQueue_trxTests.FakeQueue;
    EXEC Next_SyncQueue_trxTests.FakeTypes;
    -- The AddTestJobA item is due first: only @Type keeps it from being claimed.
    EXEC Next_SyncQueue_trxTests.AddDueItem @EnqueuedAt = @FirstKey, @Type = 'AddTestJobA';
    EXEC Next_SyncQueue_trxTests.AddDueItem @EnqueuedAt = @SecondKey, @Type = 'AddTestJobB';

    EXEC @RetCode = dbo.Next_SyncQueue_trx @LockedBy = N'worker-1', @Type = 'AddTestJobB';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @FirstStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @FirstKey;
    SELECT @SecondStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @SecondKey;
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Pending', @Actual = @FirstStatus, @Message = N'the item of the other type';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Processing', @Actual = @SecondStatus, @Message = N'the item of the type asked for';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    EXEC Next_SyncQueue_trxTests.FakeQueue;
    EXEC Next_SyncQueue_trxTests.AddDueItem @EnqueuedAt = @Key;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Next_SyncQueue_trx;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
END;
GO
-- The worker reads one row: the key, the token to report with, the lease to renew
-- before, and the attempt number. The metadata comes from SQL Server's analysis of the
-- procedure (through Next_SyncQueue_Batch_trx), without running it.
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx returns EnqueuedAt UpdatedAt LeaseUntil and AttemptNum when a worker reads its row]
AS
BEGIN
    DECLARE @Columns NVARCHAR(4000);
    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, N' ', r.system_type_name, N' ', r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(N'EXEC dbo.Next_SyncQueue_trx;', NULL, 0) AS r;

    EXEC tSQLt.AssertEqualsString
        @Expected = N'EnqueuedAt datetime2(7) , UpdatedAt datetime2(7) , LeaseUntil datetime2(7) , AttemptNum smallint ',
        @Actual = @Columns;
END;
GO
--[@tSQLt:NoTransaction]('Next_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_SyncQueue_trxTests.[test Next_SyncQueue_trx raises 735707 and claims nothing when WaitMs is out of range]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Status VARCHAR(20);
    EXEC Next_SyncQueue_trxTests.FakeQueue;
    EXEC Next_SyncQueue_trxTests.AddDueItem @EnqueuedAt = @Key;

    BEGIN TRY
        EXEC dbo.Next_SyncQueue_trx @LockedBy = N'worker-1', @WaitMs = 60001;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@WaitMs%', @Actual = @ErrorMessage;
    SELECT @Status = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
END;
GO

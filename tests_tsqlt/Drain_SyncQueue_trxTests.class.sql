SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Drain_SyncQueue_trxTests';
GO
-- The drain refuses a transaction, so every test that gets past its first check
-- is a NoTransaction test: the fakes below hold the rows the drain commits, and
-- tSQLt puts the real tables back after the test. dbo.SyncQueueType,
-- dbo.QueueStatus and dbo.QueueTransition stay real: the claim checks @Type
-- (CustomerSync, a deployed job type) against dbo.SyncQueueType. The faked queue
-- has no foreign key, so it also holds items of InventorySync
-- (another deployed type). The settings are faked empty, so
-- syncqueue.maxAttempts is 3.
-- The job procedures are this class's, not dbo's: FakeQueue fakes the drain's lookup
-- (dbo.JobProcedureToRun_fn) with ClassJobToRun, so that a row naming dbo.<name> runs
-- the class's procedure of that name. The tests of the drain's refusals keep the real
-- lookup (@RealLookup = 1); its own rules are tested in JobProcedureToRun_fnTests.
-- The drain's result row (Claimed, Completed, Failed, TakenOver) cannot be read
-- here: INSERT ... EXEC runs the procedure inside the INSERT's transaction, which
-- the drain refuses (735701). The tests assert on what it left in the queue, the
-- attempt history and the jobs' own table instead.
CREATE PROCEDURE Drain_SyncQueue_trxTests.FakeQueue
    @RealLookup BIT = 0
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueueAttempt', @ConstraintName = N'PK_SyncQueueAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueTypeProcedure';
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    -- No pause and no limit, whatever the database holds (the test of a pause adds its row).
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl', @Defaults = 1;
    IF (@RealLookup = 0)
        EXEC tSQLt.FakeFunction
            @FunctionName = N'dbo.JobProcedureToRun_fn',
            @FakeFunctionName = N'Drain_SyncQueue_trxTests.ClassJobToRun';
END;
GO
-- Stands in for dbo.JobProcedureToRun_fn: dbo.<name> is this class's procedure of that
-- name, quoted as the real lookup quotes it; NULL when the class has none.
CREATE FUNCTION Drain_SyncQueue_trxTests.ClassJobToRun(@JobProcedure NVARCHAR(400))
RETURNS NVARCHAR(300)
AS
BEGIN
    DECLARE @Name NVARCHAR(400) = SUBSTRING(@JobProcedure, 5, 400);
    IF (LEFT(@JobProcedure, 4) <> N'dbo.' OR OBJECT_ID(N'Drain_SyncQueue_trxTests.' + QUOTENAME(@Name), N'P') IS NULL)
        RETURN NULL;
    RETURN N'[Drain_SyncQueue_trxTests].' + QUOTENAME(@Name);
END;
GO
-- A backoff without jitter: 60 s after a first Error outcome. Tests where a job
-- fails use it, so that the failed item cannot come due again within the drain.
CREATE PROCEDURE Drain_SyncQueue_trxTests.SetBackoffWithoutJitter
AS
BEGIN
    INSERT INTO dbo.AppSettings (Param, ValInt)
    VALUES
    ('syncqueue.backoffBaseMs', 60000),
    ('syncqueue.backoffFactorPct', 200),
    ('syncqueue.backoffJitterPct', 0);
END;
GO
-- An item no worker holds: its token is @EnqueuedAt + 5 s and it is due at
-- @ScheduledFor (NULL: at @EnqueuedAt, long ago). With attempts behind it, its
-- last one ran 4 s and failed.
CREATE PROCEDURE Drain_SyncQueue_trxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @Type VARCHAR(50) = 'CustomerSync',
    @EntityKey NVARCHAR(200) = N'C-1',
    @Status VARCHAR(20) = 'Pending',
    @AttemptNum SMALLINT = 0,
    @ScheduledFor DATETIME2(7) = NULL
AS
BEGIN
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
        @EnqueuedAt,
        @Type,
        @EntityKey,
        N'{"full":true}',
        @Status,
        NULL,
        @AttemptNum,
        N'',
        CASE WHEN @AttemptNum > 0 THEN N'HTTP 503' ELSE N'' END,
        CASE WHEN @AttemptNum > 0 THEN DATEADD(SECOND, 1, @EnqueuedAt) END,
        CASE WHEN @AttemptNum > 0 THEN 4000 END,
        ISNULL(@ScheduledFor, @EnqueuedAt),
        DATEADD(SECOND, 5, @EnqueuedAt),
        0,
        NULL,
        NULL,
        CASE WHEN @AttemptNum > 0 THEN N'agent-0' END,
        NULL
    );
END;
GO
-- Job procedures for the drain to run, with the contract of
-- dbo.Drain_SyncQueue_trx's header. Each first writes what it was given to
-- #JobLog, which the test creates: a temp table takes part in the drain's
-- transaction, so the row of a job whose attempt is rolled back disappears.
CREATE PROCEDURE Drain_SyncQueue_trxTests.JobSucceeds
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX) = NULL,
    @Response NVARCHAR(MAX) = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO #JobLog (EnqueuedAt, EntityKey, Payload) VALUES (@EnqueuedAt, @EntityKey, @Payload);
    SET @Response = N'synced ' + @EntityKey;
    RETURN 0;
END;
GO
-- Fails with a conversion error (245): unlike a division by zero, no session
-- setting (ANSI_WARNINGS, ARITHABORT) can turn it into a warning.
CREATE PROCEDURE Drain_SyncQueue_trxTests.JobFails
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX) = NULL,
    @Response NVARCHAR(MAX) = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @NotANumber INT;
    INSERT INTO #JobLog (EnqueuedAt, EntityKey, Payload) VALUES (@EnqueuedAt, @EntityKey, @Payload);
    SET @NotANumber = CAST(@EntityKey AS INT);
    SET @Response = N'unreachable';
    RETURN 0;
END;
GO
CREATE PROCEDURE Drain_SyncQueue_trxTests.JobReturnsOne
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX) = NULL,
    @Response NVARCHAR(MAX) = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO #JobLog (EnqueuedAt, EntityKey, Payload) VALUES (@EnqueuedAt, @EntityKey, @Payload);
    SET @Response = N'half done';
    RETURN 1;
END;
GO
-- Calls a procedure that does not exist (error 2812 inside the job). The name is
-- a variable, as a job's dynamic dispatch would be, so that the build sees no
-- reference to a missing object.
CREATE PROCEDURE Drain_SyncQueue_trxTests.JobCallsMissing
    @EnqueuedAt DATETIME2(7),
    @EntityKey NVARCHAR(200),
    @Payload NVARCHAR(MAX) = NULL,
    @Response NVARCHAR(MAX) = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @Helper NVARCHAR(300) = N'Drain_SyncQueue_trxTests.NoSuchHelper';
    INSERT INTO #JobLog (EnqueuedAt, EntityKey, Payload) VALUES (@EnqueuedAt, @EntityKey, @Payload);
    EXEC @Helper;
    SET @Response = N'unreachable';
    RETURN 0;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Drain_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx completes every due item of the type and commits when its job succeeds]
AS
BEGIN
    -- Two items are due; a third of the same type is not due for an hour.
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @Later DATETIME2(7) = '2024-01-01T00:00:03';
    DECLARE @LaterDue DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Done INT;
    DECLARE @Ended INT;
    DECLARE @Logged INT;
    DECLARE @LaterStatus VARCHAR(20);
    DECLARE @LaterAttempts INT;
    -- Text columns of a # table take tempdb's collation unless COLLATE DATABASE_DEFAULT gives them
    -- the database's, so that comparing them with the tables' never fails on a collation conflict
    -- (https://learn.microsoft.com/sql/relational-databases/collations/set-or-change-the-column-collation).
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @First, @EntityKey = N'C-1';
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Second, @EntityKey = N'C-2';
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Later, @EntityKey = N'C-3', @ScheduledFor = @LaterDue;

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    -- Each due item: completed on its first attempt by agent-1, with the job's response.
    SET @Done = (
        SELECT COUNT(*)
        FROM dbo.SyncQueue AS q
        WHERE
            q.EnqueuedAt IN (@First, @Second)
            AND q.[Status] = 'Completed'
            AND q.AttemptNum = 1
            AND q.LockedBy = N'agent-1'
            AND q.LeaseUntil IS NULL
            AND q.Duration IS NOT NULL
            AND q.Response = N'synced ' + q.EntityKey
    );
    SET @Ended = (
        SELECT COUNT(*)
        FROM dbo.SyncQueueAttempt AS a
        INNER JOIN dbo.SyncQueue AS q ON a.EnqueuedAt = q.EnqueuedAt
        WHERE
            a.EnqueuedAt IN (@First, @Second)
            AND a.AttemptNum = 1
            AND a.LockedBy = N'agent-1'
            AND a.Outcome = 'Completed'
            AND a.Response = N'synced ' + q.EntityKey
    );
    -- The jobs' writes committed with their reports, each with its item's entity and payload.
    SET @Logged = (
        SELECT COUNT(*)
        FROM #JobLog AS l
        INNER JOIN dbo.SyncQueue AS q ON l.EnqueuedAt = q.EnqueuedAt
        WHERE l.EntityKey = q.EntityKey AND l.Payload = q.Payload
    );
    SELECT
        @LaterStatus = q.[Status],
        @LaterAttempts = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Later;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Done, @Message = N'items completed by agent-1';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Ended, @Message = N'attempts ended as Completed';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Logged, @Message = N'rows the jobs wrote';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @LaterStatus, @Message = N'the item not yet due';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @LaterAttempts, @Message = N'the item not yet due: AttemptNum';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx leaves items of other types untouched when it drains a type]
AS
BEGIN
    -- InventorySync has a job procedure too: the drain works on @Type only.
    DECLARE @Customer DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Inventory DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @InventoryToken DATETIME2(7) = '2024-01-01T00:00:07';
    DECLARE @RetCode INT;
    DECLARE @CustomerStatus VARCHAR(20);
    DECLARE @InventoryStatus VARCHAR(20);
    DECLARE @InventoryAttempts INT;
    DECLARE @InventoryUpdatedAt DATETIME2(7);
    DECLARE @InventoryHistory INT;
    DECLARE @InventoryLogged INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES
    ('CustomerSync', N'dbo.JobSucceeds'),
    ('InventorySync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Customer, @EntityKey = N'C-1';
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Inventory, @Type = 'InventorySync', @EntityKey = N'SKU-1';

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @CustomerStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Customer;
    SELECT
        @InventoryStatus = q.[Status],
        @InventoryAttempts = q.AttemptNum,
        @InventoryUpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Inventory;
    SET @InventoryHistory = (
        SELECT COUNT(*) FROM dbo.SyncQueueAttempt AS a
        WHERE a.EnqueuedAt = @Inventory
    );
    SET @InventoryLogged = (
        SELECT COUNT(*) FROM #JobLog AS l
        WHERE l.EnqueuedAt = @Inventory
    );
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @CustomerStatus, @Message = N'the CustomerSync item';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @InventoryStatus, @Message = N'the InventorySync item';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @InventoryAttempts, @Message = N'InventorySync: AttemptNum';
    EXEC tSQLt.AssertEquals
        @Expected = @InventoryToken, @Actual = @InventoryUpdatedAt, @Message = N'InventorySync: UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @InventoryHistory, @Message = N'InventorySync: attempts';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @InventoryLogged, @Message = N'InventorySync: job runs';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx rolls back what the job wrote and reports Error with the error text when the job fails]
AS
BEGIN
    -- The first attempt fails: the item is due again after the backoff (60 s
    -- here), so the drain does not take it again and ends.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @AttemptError NVARCHAR(MAX);
    DECLARE @Logged INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    EXEC Drain_SyncQueue_trxTests.SetBackoffWithoutJitter;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobFails');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @EntityKey = N'C-1';

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
    SET @After = SYSUTCDATETIME();
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @Error = q.Error,
        @ScheduledFor = q.ScheduledFor,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT
        @Outcome = a.Outcome,
        @AttemptError = a.Error
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    SET @Logged = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Logged, @Message = N'the job''s write is rolled back';
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'claimed once';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'the lease is cleared';
    -- The error's number, then where it happened and its message.
    EXEC tSQLt.AssertLike @ExpectedPattern = N'error 245 %JobFails%', @Actual = @Error;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
    EXEC tSQLt.AssertEqualsString @Expected = @Error, @Actual = @AttemptError, @Message = N'the attempt''s Error';
    IF @ScheduledFor IS NULL OR @ScheduledFor < DATEADD(SECOND, 60, @Before) OR @ScheduledFor > DATEADD(SECOND, 60, @After)
        EXEC tSQLt.Fail @Message0 = N'the failed item is due again after the backoff (60 s)';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx fails the item when its job fails on the last attempt]
AS
BEGIN
    -- Two of three attempts are spent: the drain's claim is the last one.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @Logged INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    EXEC Drain_SyncQueue_trxTests.SetBackoffWithoutJitter;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobFails');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @EntityKey = N'C-1', @Status = 'Error', @AttemptNum = 2;

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @Error = q.Error
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @Outcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    SET @Logged = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @AttemptNum, @Message = N'AttemptNum';
    EXEC tSQLt.AssertLike @ExpectedPattern = N'error 245 %JobFails%', @Actual = @Error;
    EXEC tSQLt.AssertEqualsString @Expected = 'Failed', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Logged, @Message = N'the job''s write is rolled back';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx reports Error and rolls back what the job wrote when the job returns a code other than 0]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Outcome VARCHAR(20);
    DECLARE @Logged INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    EXEC Drain_SyncQueue_trxTests.SetBackoffWithoutJitter;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobReturnsOne');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @EntityKey = N'C-1';

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @Response = q.Response,
        @Error = q.Error
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @Outcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    SET @Logged = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @AttemptNum, @Message = N'claimed once';
    EXEC tSQLt.AssertEqualsString
        @Expected = N'[Drain_SyncQueue_trxTests].[JobReturnsOne] returned 1', @Actual = @Error, @Message = N'Error';
    -- A failed attempt's response is not recorded as if it had succeeded.
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @Response, @Message = N'Response';
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Logged, @Message = N'the job''s write is rolled back';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx stops after MaxItems items when more are due]
AS
BEGIN
    -- Three items are due; they are claimed in enqueue order (same priority, due time).
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @Third DATETIME2(7) = '2024-01-01T00:00:03';
    DECLARE @RetCode INT;
    DECLARE @FirstStatus VARCHAR(20);
    DECLARE @SecondStatus VARCHAR(20);
    DECLARE @ThirdStatus VARCHAR(20);
    DECLARE @ThirdAttempts INT;
    DECLARE @Logged INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @First, @EntityKey = N'C-1', @ScheduledFor = @First;
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Second, @EntityKey = N'C-2', @ScheduledFor = @First;
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Third, @EntityKey = N'C-3', @ScheduledFor = @First;

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1', @MaxItems = 2;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @FirstStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @First;
    SELECT @SecondStatus = q.[Status]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Second;
    SELECT
        @ThirdStatus = q.[Status],
        @ThirdAttempts = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Third;
    SET @Logged = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @FirstStatus, @Message = N'first';
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @SecondStatus, @Message = N'second';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @ThirdStatus, @Message = N'third: left for the next run';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @ThirdAttempts, @Message = N'third: never claimed';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Logged, @Message = N'job runs';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx returns 0 and claims nothing when no item of the type is due]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @Due DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @History INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @ScheduledFor = @Due;

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SET @History = (SELECT COUNT(*) FROM dbo.SyncQueueAttempt);
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @History, @Message = N'no attempt';
END;
GO
-- A paused type (dbo.Pause_Queue_trx): the drain's claim takes nothing of it, though its
-- item is due, and the drain ends as when nothing is due.
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx returns 0 and claims nothing when its type is paused]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @RetCode INT;
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @History INT;
    DECLARE @Ran INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    INSERT INTO dbo.QueueControl ([Queue], [Type], IsPaused, PausedBy, PausedAt, PauseReason)
    VALUES (N'SyncQueue', 'CustomerSync', 1, N'ann', '2024-01-01', N'the target system is down');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key;

    EXEC @RetCode = dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SET @History = (SELECT COUNT(*) FROM dbo.SyncQueueAttempt);
    SET @Ran = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @History, @Message = N'no attempt';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Ran, @Message = N'the job did not run';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735707 and claims nothing when the type has no job procedure]
AS
BEGIN
    -- InventorySync has no row in dbo.SyncQueueTypeProcedure: its work is not T-SQL.
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @Type = 'InventorySync', @EntityKey = N'SKU-1';

    BEGIN TRY
        EXEC dbo.Drain_SyncQueue_trx @Type = 'InventorySync', @LockedBy = N'agent-1';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Type%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO
-- The drain refuses the type's JobProcedure (the real lookup): it claims the first of
-- two due items, runs nothing, gives that item back as a worker shutting down does
-- (Pending, its attempt returned, due as before, "error 735714: " and the refusal in its
-- Error and its attempt's), raises 735714 naming the procedure and @Reason, and ends
-- there. A helper of the refusal tests below, each with a JobProcedure the table's
-- CHECK would refuse or the lookup does not find: the faked TypeProcedure has no CHECK,
-- as a row from before it would not.
CREATE PROCEDURE Drain_SyncQueue_trxTests.AssertRefused
    @JobProcedure NVARCHAR(300),
    @Reason NVARCHAR(200)
AS
BEGIN
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @SecondToken DATETIME2(7) = '2024-01-01T00:00:07';
    DECLARE @Refusal NVARCHAR(400) = N'%' + @JobProcedure + N'%CustomerSync%' + @Reason + N'%';
    DECLARE @TranCount INT;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @Released INT;
    DECLARE @Logged INT;
    DECLARE @SecondUpdatedAt DATETIME2(7);
    DECLARE @SecondHistory INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue @RealLookup = 1;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', @JobProcedure);
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @First, @EntityKey = N'C-1';
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Second, @EntityKey = N'C-2';

    BEGIN TRY
        EXEC dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    SET @TranCount = @@TRANCOUNT;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735714, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = @Refusal, @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum,
        @LeaseUntil = q.LeaseUntil,
        @ScheduledFor = q.ScheduledFor,
        @Error = q.Error
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @First;
    SET @Released = (
        SELECT COUNT(*)
        FROM dbo.SyncQueueAttempt AS a
        WHERE
            a.EnqueuedAt = @First
            AND a.AttemptNum = 1
            AND a.LockedBy = N'agent-1'
            AND a.Outcome = 'Pending'
            AND a.Error LIKE N'error 735714: ' + @Refusal
    );
    SET @Logged = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'AttemptNum: the attempt is given back';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'LeaseUntil';
    EXEC tSQLt.AssertEquals @Expected = @First, @Actual = @ScheduledFor, @Message = N'ScheduledFor: due as before';
    EXEC tSQLt.AssertLike @ExpectedPattern = @Refusal, @Actual = @Error, @Message = N'the item''s Error';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Released, @Message = N'the claim''s attempt, ended as Pending';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Logged, @Message = N'no job ran';
    -- The drain ended there: the second item was never claimed.
    SELECT @SecondUpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Second;
    SET @SecondHistory = (
        SELECT COUNT(*)
        FROM dbo.SyncQueueAttempt AS a
        WHERE a.EnqueuedAt = @Second
    );
    EXEC tSQLt.AssertEquals @Expected = @SecondToken, @Actual = @SecondUpdatedAt, @Message = N'the second item is unchanged';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @SecondHistory, @Message = N'the second item: no attempt';
END;
GO
-- A procedure that exists, but in this class's schema: the drain runs dbo's only, and
-- the row's text never (it would resolve as written).
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735714 and runs nothing when the job procedure is of another schema]
AS
BEGIN
    EXEC Drain_SyncQueue_trxTests.AssertRefused
        @JobProcedure = N'Drain_SyncQueue_trxTests.JobSucceeds',
        @Reason = N'it is not dbo.<name>';
END;
GO
-- The drain looks the job procedure up before each item (as dbo sees it), so a procedure
-- that does not exist is found out before anything runs.
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735714 and gives the item back unworked when the job procedure does not exist]
AS
BEGIN
    EXEC Drain_SyncQueue_trxTests.AssertRefused
        @JobProcedure = N'dbo.Drain_SyncQueue_trxTests_NoSuchJob',
        @Reason = N'dbo holds no procedure of that name';
END;
GO
-- dbo.SyncQueue is a table (here the fake tSQLt put in its place): only a T-SQL procedure runs.
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735714 and runs nothing when the job procedure names a dbo table]
AS
BEGIN
    EXEC Drain_SyncQueue_trxTests.AssertRefused
        @JobProcedure = N'dbo.SyncQueue',
        @Reason = N'dbo holds no procedure of that name';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735707 and gives the item back unworked when the job calls a procedure that does not exist]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Status VARCHAR(20);
    DECLARE @AttemptNum INT;
    DECLARE @Outcome VARCHAR(20);
    DECLARE @Logged INT;
    CREATE TABLE #JobLog (
        EnqueuedAt DATETIME2(7) NOT NULL,
        EntityKey NVARCHAR(200) COLLATE DATABASE_DEFAULT NOT NULL,
        Payload NVARCHAR(MAX) COLLATE DATABASE_DEFAULT NULL
    );
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobCallsMissing');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key, @EntityKey = N'C-1';

    BEGIN TRY
        EXEC dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT
        @Status = q.[Status],
        @AttemptNum = q.AttemptNum
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    SELECT @Outcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Key;
    SET @Logged = (SELECT COUNT(*) FROM #JobLog);
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%JobCallsMissing%NoSuchHelper%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'Status';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @AttemptNum, @Message = N'AttemptNum: the attempt is given back';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Outcome, @Message = N'the attempt''s Outcome';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Logged, @Message = N'the job''s write is rolled back';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735707 and claims nothing when LockedBy is blank]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key;

    BEGIN TRY
        EXEC dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'   ';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@LockedBy%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735707 and claims nothing when MaxItems is below 1]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key;

    BEGIN TRY
        EXEC dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1', @MaxItems = 0;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@MaxItems%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Drain_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Drain_SyncQueue_trxTests.[test Drain_SyncQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Key DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @Token DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @ErrorNumber INT;
    DECLARE @UpdatedAt DATETIME2(7);
    EXEC Drain_SyncQueue_trxTests.FakeQueue;
    INSERT INTO dbo.SyncQueueTypeProcedure ([Type], JobProcedure)
    VALUES ('CustomerSync', N'dbo.JobSucceeds');
    EXEC Drain_SyncQueue_trxTests.AddItem @EnqueuedAt = @Key;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Drain_SyncQueue_trx @Type = 'CustomerSync', @LockedBy = N'agent-1';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT @UpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Key;
    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = @Token, @Actual = @UpdatedAt, @Message = N'the item is unchanged';
END;
GO

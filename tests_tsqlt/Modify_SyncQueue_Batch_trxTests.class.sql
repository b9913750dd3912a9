SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Modify_SyncQueue_Batch_trxTests';
GO
-- Every table the reports write (the attempt history included) and their result
-- rows (dbo.Worker_SyncQueue_V) read, and the settings faked empty so that
-- syncqueue.maxAttempts is 3. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
-- dbo.QueueStatus and dbo.QueueTransition stay real.
-- The batch's result set cannot be read here: a _trx refuses INSERT ... EXEC
-- (it runs inside the INSERT's transaction), so these tests assert on the rows
-- left in the queue, and the Python live tests check the rows returned.
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- An item in Processing, claimed by worker-a five seconds ago, with its open
-- attempt. The claim's token, the attempt's StartedAt, is @ClaimedAt; the item's
-- token now is @Token (the same unless an Extend_ or a step report moved it).
-- A report with a token older than the claim's is a takeover (735710), not stale.
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.AddClaimedItem
    @EnqueuedAt DATETIME2(7),
    @Token DATETIME2(7),
    @ClaimedAt DATETIME2(7) = NULL
AS
BEGIN
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
        @EnqueuedAt,
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
        @EnqueuedAt,
        @Token,
        0,
        NULL,
        NULL,
        N'worker-a',
        @LeaseUntil
    );
    INSERT INTO dbo.SyncQueueAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@EnqueuedAt, ISNULL(@ClaimedAt, @Token), 1, 'Fetch', N'worker-a', NULL, NULL, N'', N'');
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx raises 735701 when a transaction is open]
AS
BEGIN
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem
        @EnqueuedAt = '2024-01-01T00:00:01', @Token = '2024-01-01T00:00:05';
    INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status])
    VALUES ('2024-01-01T00:00:01', '2024-01-01T00:00:05', 'Completed');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx applies every outcome and commits when all are legal]
AS
BEGIN
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @FirstToken DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @SecondToken DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @Third DATETIME2(7) = '2024-01-01T00:00:03';
    DECLARE @ThirdToken DATETIME2(7) = '2024-01-01T00:00:07';
    DECLARE @RetryAt DATETIME2(7) = DATEADD(MINUTE, 5, SYSUTCDATETIME());
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Step VARCHAR(50);
    DECLARE @Response NVARCHAR(MAX);
    DECLARE @Error NVARCHAR(MAX);
    DECLARE @ScheduledFor DATETIME2(7);
    DECLARE @UpdatedAt DATETIME2(7);
    DECLARE @LeaseUntil DATETIME2(7);
    DECLARE @Outcome VARCHAR(20);
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem @EnqueuedAt = @First, @Token = @FirstToken;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem @EnqueuedAt = @Second, @Token = @SecondToken;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem @EnqueuedAt = @Third, @Token = @ThirdToken;
    -- A step advance, a completion and a retry, listed out of key order.
    INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status], [Step], Response, Error, ScheduledFor)
    VALUES
    (@Third, @ThirdToken, 'Processing', 'Push', NULL, NULL, NULL),
    (@First, @FirstToken, 'Completed', NULL, N'{"synced":true}', NULL, NULL),
    (@Second, @SecondToken, 'Error', NULL, NULL, N'HTTP 503', @RetryAt);

    EXEC @RetCode = dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';

    SELECT
        @Status = q.[Status],
        @Response = q.Response,
        @UpdatedAt = q.UpdatedAt,
        @LeaseUntil = q.LeaseUntil
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @First;
    SELECT @Outcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @First;
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Status, @Message = N'first: Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'{"synced":true}', @Actual = @Response, @Message = N'first: Response';
    EXEC tSQLt.AssertEqualsString @Expected = 'Completed', @Actual = @Outcome, @Message = N'first: attempt Outcome';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @LeaseUntil, @Message = N'first: the lease is cleared';
    IF @UpdatedAt IS NULL OR @UpdatedAt <= @FirstToken
        EXEC tSQLt.Fail @Message0 = N'first: the report must move UpdatedAt forward';

    SELECT
        @Status = q.[Status],
        @Error = q.Error,
        @ScheduledFor = q.ScheduledFor
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Second;
    SELECT @Outcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Second;
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Status, @Message = N'second: Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'HTTP 503', @Actual = @Error, @Message = N'second: Error';
    EXEC tSQLt.AssertEquals @Expected = @RetryAt, @Actual = @ScheduledFor, @Message = N'second: ScheduledFor';
    EXEC tSQLt.AssertEqualsString @Expected = 'Error', @Actual = @Outcome, @Message = N'second: attempt Outcome';

    SELECT
        @Status = q.[Status],
        @Step = q.[Step]
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Third;
    SELECT @Outcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Third;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status, @Message = N'third: Status';
    EXEC tSQLt.AssertEqualsString @Expected = 'Push', @Actual = @Step, @Message = N'third: Step';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Outcome, @Message = N'third: the attempt stays open';
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx raises the error of the refused item and changes no item when one outcome is refused]
AS
BEGIN
    -- The first item's outcome is legal and applied first (key order); the
    -- second's token is stale. All or nothing: the first must not stay applied.
    -- The RAISERROR moves control to the CATCH below before the procedure's own
    -- rollback, so the test rolls back the transaction the batch left open: a
    -- batch that had committed the first item on its own would still show it.
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @FirstToken DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @SecondToken DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @StaleToken DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @FirstStatus VARCHAR(20);
    DECLARE @FirstUpdatedAt DATETIME2(7);
    DECLARE @FirstResponse NVARCHAR(MAX);
    DECLARE @FirstOutcome VARCHAR(20);
    DECLARE @SecondStatus VARCHAR(20);
    DECLARE @SecondUpdatedAt DATETIME2(7);
    DECLARE @SecondOutcome VARCHAR(20);
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem @EnqueuedAt = @First, @Token = @FirstToken;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem
        @EnqueuedAt = @Second, @Token = @SecondToken, @ClaimedAt = @StaleToken;
    INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status], Response)
    VALUES
    (@First, @FirstToken, 'Completed', N'{"synced":true}'),
    (@Second, @StaleToken, 'Completed', N'{"synced":true}');

    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    SELECT
        @FirstStatus = q.[Status],
        @FirstUpdatedAt = q.UpdatedAt,
        @FirstResponse = q.Response
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @First;
    SELECT @FirstOutcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @First;
    SELECT
        @SecondStatus = q.[Status],
        @SecondUpdatedAt = q.UpdatedAt
    FROM dbo.SyncQueue AS q
    WHERE q.EnqueuedAt = @Second;
    SELECT @SecondOutcome = a.Outcome
    FROM dbo.SyncQueueAttempt AS a
    WHERE a.EnqueuedAt = @Second;
    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @ErrorNumber;
    -- The message names the refused item (style 126 of its key).
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%2024-01-01T00:00:02%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @FirstStatus, @Message = N'first: Status';
    EXEC tSQLt.AssertEquals @Expected = @FirstToken, @Actual = @FirstUpdatedAt, @Message = N'first: UpdatedAt';
    EXEC tSQLt.AssertEqualsString @Expected = N'', @Actual = @FirstResponse, @Message = N'first: Response';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @FirstOutcome, @Message = N'first: the attempt stays open';
    EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @SecondStatus, @Message = N'second: Status';
    EXEC tSQLt.AssertEquals @Expected = @SecondToken, @Actual = @SecondUpdatedAt, @Message = N'second: UpdatedAt';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @SecondOutcome, @Message = N'second: the attempt stays open';
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx raises the error of the earliest key when two outcomes are refused]
AS
BEGIN
    -- Reports go in key order whatever order the caller listed them in: the
    -- earlier item was claimed again since the caller's token (735710), the
    -- later one only has a stale token (735705); the batch stops at the earlier.
    DECLARE @First DATETIME2(7) = '2024-01-01T00:00:01';
    DECLARE @FirstOldToken DATETIME2(7) = '2024-01-01T00:00:05';
    DECLARE @FirstNewToken DATETIME2(7) = '2024-01-01T00:10:05';
    DECLARE @Second DATETIME2(7) = '2024-01-01T00:00:02';
    DECLARE @SecondToken DATETIME2(7) = '2024-01-01T00:00:06';
    DECLARE @StaleToken DATETIME2(7) = '2024-01-01T00:00:04';
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    DECLARE @ErrorNumber INT;
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem @EnqueuedAt = @First, @Token = @FirstNewToken;
    INSERT INTO dbo.SyncQueueAttempt (
        EnqueuedAt, StartedAt, AttemptNum, [Step], LockedBy, Outcome, Duration, Response, Error
    )
    VALUES (@First, @FirstOldToken, 1, 'Fetch', N'worker-z', 'Error', NULL, N'', N'abandoned: the lease expired');
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem
        @EnqueuedAt = @Second, @Token = @SecondToken, @ClaimedAt = @StaleToken;
    INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status])
    VALUES
    (@Second, @StaleToken, 'Completed'),
    (@First, @FirstOldToken, 'Completed');

    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735710, @Actual = @ErrorNumber;
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx raises 735707 when the batch is empty]
AS
BEGIN
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;

    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Outcomes%', @Actual = @ErrorMessage;
END;
GO
-- Which locks the batch holds when it reports each item: the spy that stands for
-- dbo.Modify_SyncQueue_utx records, at each call, whether the batch's transaction
-- holds the lock of DedupKey dedup-1 and of dedup-2 (dbo.Lock_ItemKeys_utx's
-- names; APPLOCK_MODE: Exclusive or NoLock).
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.SpyLocks
AS
BEGIN
    EXEC tSQLt.SpyProcedure
        @ProcedureName = N'dbo.Modify_SyncQueue_utx',
        @CommandToExecute = N'DECLARE @One dbo.DedupKey = N''dedup-1'';
            DECLARE @Two dbo.DedupKey = N''dedup-2'';
            INSERT INTO #Locks (EnqueuedAt, ModeOne, ModeTwo)
            VALUES (
                @EnqueuedAt,
                APPLOCK_MODE(''public'', N''dbo.SyncQueue.DedupKey#'' + CAST(CHECKSUM(@One) AS NVARCHAR(11)), ''Transaction''),
                APPLOCK_MODE(''public'', N''dbo.SyncQueue.DedupKey#'' + CAST(CHECKSUM(@Two) AS NVARCHAR(11)), ''Transaction'')
            );';
END;
GO
-- Two claimed items, carrying DedupKeys dedup-1 and dedup-2; with @SecondFailed the
-- second has failed meanwhile (a report for it is then a retry by hand).
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.AddDedupItems
    @SecondFailed BIT = 0
AS
BEGIN
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem
        @EnqueuedAt = '2024-01-01T00:00:01', @Token = '2024-01-01T00:00:05';
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem
        @EnqueuedAt = '2024-01-01T00:00:02', @Token = '2024-01-01T00:00:06';
    UPDATE dbo.SyncQueue
    SET
        DedupKey = CASE WHEN EnqueuedAt = '2024-01-01T00:00:01' THEN N'dedup-1' ELSE N'dedup-2' END,
        [Status] = CASE WHEN EnqueuedAt = '2024-01-01T00:00:02' AND @SecondFailed = 1 THEN 'Failed' ELSE [Status] END;
END;
GO
-- Reports the two items of AddDedupItems in one batch, the first with @FirstStatus and
-- the second with @SecondStatus, the spy recording the locks held at each report, and
-- asserts that the batch succeeded with two reports, @HeldOne of them holding dedup-1's
-- lock and @HeldTwo dedup-2's.
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.AssertLocksHeld
    @FirstStatus VARCHAR(20),
    @SecondStatus VARCHAR(20),
    @HeldOne INT,
    @HeldTwo INT
AS
BEGIN
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    DECLARE @RetCode INT;
    DECLARE @Calls INT;
    DECLARE @One INT;
    DECLARE @Two INT;
    -- Text columns of a # table take tempdb's collation unless COLLATE DATABASE_DEFAULT gives them
    -- the database's, so that comparing them with the tables' never fails on a collation conflict
    -- (https://learn.microsoft.com/sql/relational-databases/collations/set-or-change-the-column-collation).
    CREATE TABLE #Locks (
        EnqueuedAt DATETIME2(7) NOT NULL, ModeOne NVARCHAR(32) COLLATE DATABASE_DEFAULT NOT NULL, ModeTwo NVARCHAR(32) COLLATE DATABASE_DEFAULT NOT NULL
    );
    EXEC Modify_SyncQueue_Batch_trxTests.SpyLocks;
    INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status])
    VALUES
    ('2024-01-01T00:00:01', '2024-01-01T00:00:05', @FirstStatus),
    ('2024-01-01T00:00:02', '2024-01-01T00:00:06', @SecondStatus);

    EXEC @RetCode = dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;

    SELECT
        @Calls = COUNT(*),
        @One = SUM(CASE WHEN l.ModeOne = N'Exclusive' THEN 1 ELSE 0 END),
        @Two = SUM(CASE WHEN l.ModeTwo = N'Exclusive' THEN 1 ELSE 0 END)
    FROM #Locks AS l;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Calls, @Message = N'reports';
    EXEC tSQLt.AssertEquals @Expected = @HeldOne, @Actual = @One, @Message = N'reports made holding dedup-1';
    EXEC tSQLt.AssertEquals @Expected = @HeldTwo, @Actual = @Two, @Message = N'reports made holding dedup-2';
END;
GO
-- A Pending outcome for a Failed item takes its DedupKey lock, as Add_ does, before any row:
-- taken at the Pending item alone, it would come after the rows of the items
-- before it, and an enqueue holding it and reading their DedupKey would deadlock.
-- The other item's DedupKey stays free: an enqueue of it does not wait for the batch.
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx locks the DedupKey of a Failed item before the first report when it is put back]
AS
BEGIN
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddDedupItems @SecondFailed = 1;

    EXEC Modify_SyncQueue_Batch_trxTests.AssertLocksHeld
        @FirstStatus = 'Completed', @SecondStatus = 'Pending', @HeldOne = 0, @HeldTwo = 2;
END;
GO
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx leaves enqueues free when no outcome is Pending]
AS
BEGIN
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddDedupItems;

    EXEC Modify_SyncQueue_Batch_trxTests.AssertLocksHeld
        @FirstStatus = 'Completed', @SecondStatus = 'Failed', @HeldOne = 0, @HeldTwo = 0;
END;
GO
-- A worker putting an item back (Processing to Pending) keeps its key unfinished:
-- no lock, so it never waits for a producer's open transaction with that DedupKey.
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx takes no DedupKey lock when a claimed item is put back]
AS
BEGIN
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddDedupItems;

    EXEC Modify_SyncQueue_Batch_trxTests.AssertLocksHeld
        @FirstStatus = 'Pending', @SecondStatus = 'Pending', @HeldOne = 0, @HeldTwo = 0;
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Modify_SyncQueue_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @Outcomes dbo.SyncQueueOutcomeList;
    DECLARE @ErrorNumber INT;
    EXEC Modify_SyncQueue_Batch_trxTests.FakeQueue;
    EXEC Modify_SyncQueue_Batch_trxTests.AddClaimedItem
        @EnqueuedAt = '2024-01-01T00:00:01', @Token = '2024-01-01T00:00:05';
    INSERT INTO @Outcomes (EnqueuedAt, UpdatedAt, [Status])
    VALUES ('2024-01-01T00:00:01', '2024-01-01T00:00:05', 'Completed');

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes = @Outcomes;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
END;
GO
-- SSIS, ADF and ORM scaffolding ask SQL Server to describe a procedure's first result set
-- without running it (sys.dm_exec_describe_first_result_set, as sp_describe_first_result_set
-- does). The analysis enters every procedure a call may reach and stops at an extended
-- procedure, as sp_getapplock is underneath, unless its EXEC says WITH RESULT SETS NONE
-- (the build's check describable). A failed description comes back as a row's error_message.
CREATE PROCEDURE Modify_SyncQueue_Batch_trxTests.[test Modify_SyncQueue_Batch_trx describes its result set when a tool asks]
AS
BEGIN
    DECLARE @Columns NVARCHAR(MAX);
    DECLARE
        @Expected NVARCHAR(MAX) = N'EnqueuedAt, UpdatedAt, Status, ScheduledFor';

    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(
        N'DECLARE @Outcomes dbo.SyncQueueOutcomeList; EXEC dbo.Modify_SyncQueue_Batch_trx @Outcomes '
        + N'= @Outcomes;',
        NULL,
        0
    ) AS r;

    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Columns;
END;
GO

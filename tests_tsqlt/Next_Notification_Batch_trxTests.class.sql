SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_Notification_Batch_trxTests';
GO
-- Every table the claim and its result rows (dbo.Worker_Notification_V) read or
-- write, and the settings faked empty so that notification.maxAttempts is 3 and
-- notification.leaseSeconds 300. In a NoTransaction test the fakes hold the
-- committed rows; tSQLt puts the real tables back after the test.
--
-- The result set cannot be captured in T-SQL: INSERT ... EXEC runs the procedure
-- inside the INSERT's transaction, where a _trx refuses (50001, tested below). The
-- tests check its columns with sys.dm_exec_describe_first_result_set and assert on
-- the rows the claim committed; the order of the rows (dbo.Next_Notification_utx's
-- @Claimed order, tested there) is left to the Python live tests.
CREATE PROCEDURE Next_Notification_Batch_trxTests.FakeQueue
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.Notification', @ConstraintName = N'PK_Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.NotificationAttempt', @Defaults = 1;
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.NotificationAttempt', @ConstraintName = N'PK_NotificationAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
END;
GO
-- One Pending ResetPassword item with every column the claim reads.
CREATE PROCEDURE Next_Notification_Batch_trxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @ScheduledFor DATETIME2(7) = NULL,
    @Priority SMALLINT = 0
AS
BEGIN
    INSERT INTO dbo.Notification (
        EnqueuedAt,
        [Type],
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
        'ResetPassword',
        'Pending',
        NULL,
        0,
        N'',
        N'',
        NULL,
        NULL,
        ISNULL(@ScheduledFor, @EnqueuedAt),
        @EnqueuedAt,
        @Priority,
        NULL,
        NULL,
        NULL,
        NULL
    );
END;
GO
-- The seconds of the keys in the given state, in key order, as a list such as '2,3'
-- (every test key is a second of 2024-01-01T00:00).
CREATE PROCEDURE Next_Notification_Batch_trxTests.AssertKeysIn
    @Status VARCHAR(20),
    @Expected VARCHAR(400),
    @Message NVARCHAR(200)
AS
BEGIN
    DECLARE @Actual VARCHAR(400);
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CAST(DATEPART(SECOND, n.EnqueuedAt) AS VARCHAR(2)), ',') WITHIN GROUP (ORDER BY n.EnqueuedAt),
            ''
        )
    FROM dbo.Notification AS n
    WHERE n.[Status] = @Status;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = @Message;
END;
GO
-- Calls the claim with a bad @WaitMs and asserts that it raised 50007.
CREATE PROCEDURE Next_Notification_Batch_trxTests.AssertWaitRefused
    @WaitMs INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    BEGIN TRY
        EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @WaitMs = @WaitMs;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@WaitMs%', @Actual = @ErrorMessage, @Message = @Case;
END;
GO
-- Run after each NoTransaction test: a _trx that raised an error inside
-- tSQLt's TRY...CATCH leaves its own transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Next_Notification_Batch_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 50001 when a transaction is open]
AS
BEGIN
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 50001;

    EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5;
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx claims and commits the most urgent items up to BatchSize when no transaction is open]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Held INT;
    DECLARE @OpenAttempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    -- Due: 1 (Priority 0), 2 (Priority 5), 3 (Priority 1); 4 (Priority 9) is not due yet.
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @Priority = 0;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02', @Priority = 5;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03', @Priority = 1;
    EXEC Next_Notification_Batch_trxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:04', @ScheduledFor = @Later, @Priority = 9;

    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 2;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Processing', @Expected = '2,3', @Message = N'the two most urgent due items';
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Pending', @Expected = '1,4', @Message = N'the others';
    SELECT @Held = COUNT(*)
    FROM dbo.Notification AS n
    WHERE n.[Status] = 'Processing' AND n.LockedBy = N'worker-1' AND n.AttemptNum = 1 AND n.LeaseUntil > n.StartedAt;
    SELECT @OpenAttempts = COUNT(*)
    FROM dbo.NotificationAttempt AS a
    WHERE a.Outcome IS NULL AND a.LockedBy = N'worker-1';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Held, @Message = N'items held by worker-1 under a lease';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @OpenAttempts, @Message = N'open attempts';
END;
GO
-- The worker reads one row per item: the key, the token to report with, the lease to
-- renew before, and the attempt number. The metadata comes from SQL Server's analysis
-- of the procedure, without running it.
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx returns EnqueuedAt UpdatedAt LeaseUntil and AttemptNum when a worker reads its rows]
AS
BEGIN
    DECLARE @Columns NVARCHAR(4000);
    SELECT
        @Columns = STRING_AGG(CONCAT(r.name, N' ', r.system_type_name, N' ', r.error_message), N', ')
        WITHIN GROUP (ORDER BY r.column_ordinal)
    FROM sys.dm_exec_describe_first_result_set(N'EXEC dbo.Next_Notification_Batch_trx @BatchSize = 5;', NULL, 0) AS r;

    EXEC tSQLt.AssertEqualsString
        @Expected = N'EnqueuedAt datetime2(7) , UpdatedAt datetime2(7) , LeaseUntil datetime2(7) , AttemptNum smallint ',
        @Actual = @Columns;
END;
GO
-- INSERT ... EXEC runs the procedure inside the INSERT's own transaction (@@TRANCOUNT
-- is 1 in it), where a COMMIT would not commit and a ROLLBACK is refused: the _trx
-- refuses the call, and a caller reads its rows as a result set instead.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 50001 and claims nothing when its rows are captured by INSERT EXEC]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    CREATE TABLE #Rows (
        EnqueuedAt DATETIME2(7) NULL,
        UpdatedAt DATETIME2(7) NULL,
        LeaseUntil DATETIME2(7) NULL,
        AttemptNum SMALLINT NULL
    );

    BEGIN TRY
        INSERT INTO #Rows (EnqueuedAt, UpdatedAt, LeaseUntil, AttemptNum)
        EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Pending', @Expected = '1', @Message = N'the item stays Pending';
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 50007 and claims nothing when WaitMs is out of range]
AS
BEGIN
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    EXEC Next_Notification_Batch_trxTests.AssertWaitRefused @WaitMs = -1, @Case = N'@WaitMs -1';
    EXEC Next_Notification_Batch_trxTests.AssertWaitRefused @WaitMs = 60001, @Case = N'@WaitMs 60001';
    EXEC Next_Notification_Batch_trxTests.AssertWaitRefused @WaitMs = NULL, @Case = N'@WaitMs NULL';

    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Pending', @Expected = '1', @Message = N'the item stays Pending';
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 50007 and leaves no transaction when BatchSize is out of range]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @TranCount INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    -- Refused before the procedure opens its transaction, so even a CATCH that
    -- takes over at the error finds none open.
    BEGIN TRY
        EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 0;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET @TranCount = @@TRANCOUNT;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50007, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT';
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Pending', @Expected = '1', @Message = N'the item stays Pending';
END;
GO
-- Long-poll: with nothing due, the call returns only when @WaitMs has passed. Only a
-- lower bound is asserted: a busy server may take longer.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx waits WaitMs and claims nothing when nothing is due]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @ElapsedMs INT;
    DECLARE @Failure NVARCHAR(400);
    DECLARE @Attempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Later;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @WaitMs = 300;
    SET @After = SYSUTCDATETIME();
    SET @TranCount = @@TRANCOUNT;

    SET @ElapsedMs = DATEDIFF(MILLISECOND, @Before, @After);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT after the call';
    IF @ElapsedMs < 250
        BEGIN
            SET @Failure = CONCAT(N'the call must wait @WaitMs (300 ms) for work; it returned after ', @ElapsedMs, N' ms');
            EXEC tSQLt.Fail @Message0 = @Failure;
        END;
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Pending', @Expected = '1', @Message = N'the item is not due yet';
    SELECT @Attempts = COUNT(*)
    FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
-- An item that comes due while the call waits is claimed by the same call.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx claims an item that comes due during the wait when WaitMs is long enough]
AS
BEGIN
    DECLARE @Soon DATETIME2(7) = DATEADD(MILLISECOND, 300, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @StartedAt DATETIME2(7);
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Soon;

    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @WaitMs = 10000;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Processing', @Expected = '1', @Message = N'the item came due and was claimed';
    SELECT @StartedAt = n.StartedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = '2024-01-01T00:00:01';
    IF @StartedAt IS NULL OR @StartedAt < @Soon
        EXEC tSQLt.Fail @Message0 = N'the claim must not come before the item is due';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 50001 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1';
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 50001, @Actual = @ErrorNumber;
    EXEC Next_Notification_Batch_trxTests.AssertKeysIn
        @Status = 'Pending', @Expected = '1', @Message = N'the item stays Pending';
END;
GO

SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Next_Notification_Batch_trxTests';
GO
-- Every table the claim writes (the attempt history included: its foreign key would
-- refuse the rows of a faked queue) and its result rows (dbo.Worker_Notification_V) read,
-- the tables the view joins among them, and the settings faked empty so that
-- notification.maxAttempts is 3 and notification.leaseSeconds 300. In a NoTransaction test
-- the fakes hold the committed rows; tSQLt puts the real tables back after the test.
--
-- The result set cannot be captured here: INSERT ... EXEC runs the procedure inside
-- the INSERT's transaction, where a _trx refuses (735701). The tests check its columns
-- with sys.dm_exec_describe_first_result_set and assert on the rows the claim left;
-- the order of the claim, which the rows follow, is dbo.Next_Notification_utx's and is
-- tested there through @Claimed.
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
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueControl'; -- no pause, no limit, whatever the database holds
END;
GO
-- One Pending notification with every column the claim reads, due at its key unless
-- ScheduledFor is given.
CREATE PROCEDURE Next_Notification_Batch_trxTests.AddItem
    @EnqueuedAt DATETIME2(7),
    @ScheduledFor DATETIME2(7) = NULL,
    @Priority SMALLINT = 0,
    @GroupKey NVARCHAR(100) = NULL
AS
BEGIN
    INSERT INTO dbo.Notification (
        EnqueuedAt,
        [Type],
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
        'ResetPassword',
        'Pending',
        NULL,
        0,
        NULL,
        ISNULL(@ScheduledFor, @EnqueuedAt),
        @EnqueuedAt,
        @Priority,
        @GroupKey,
        NULL,
        NULL
    );
END;
GO
-- Calls the batch claim with a bad @WaitMs and asserts that it raised 735707.
-- The check comes before the transaction: nothing is left open.
CREATE PROCEDURE Next_Notification_Batch_trxTests.AssertWaitMsRefused
    @WaitMs INT,
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @TranCount INT;
    BEGIN TRY
        EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5, @WaitMs = @WaitMs;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    SET @TranCount = @@TRANCOUNT;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@WaitMs%', @Actual = @ErrorMessage, @Message = @Case;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = @Case;
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
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735701;

    EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5;
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx claims and commits a batch when several items are due]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Held VARCHAR(400);
    DECLARE @StillPending VARCHAR(400);
    DECLARE @OpenAttempts VARCHAR(400);
    DECLARE @AttemptsAtToken INT;
    DECLARE @Leases INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    -- Due: 1, 2 (urgent), 3 (first of group g); waiting: 4 (behind 3 in g), 5 (not yet due).
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02', @Priority = 5;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03', @GroupKey = N'g';
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04', @GroupKey = N'g';
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:05', @ScheduledFor = @Later;

    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    -- A NoTransaction test makes no permanent objects, so it asserts values, not tables
    -- (AssertEqualsTable creates a work table).
    SELECT
        @Held = STRING_AGG(CAST(DATEPART(SECOND, q.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY q.EnqueuedAt)
    FROM dbo.Notification AS q
    WHERE q.[Status] = 'Processing' AND q.AttemptNum = 1 AND q.LockedBy = N'worker-1';
    SELECT
        @StillPending = STRING_AGG(CAST(DATEPART(SECOND, q.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY q.EnqueuedAt)
    FROM dbo.Notification AS q
    WHERE q.[Status] = 'Pending' AND q.AttemptNum = 0;
    SELECT
        @OpenAttempts = STRING_AGG(CAST(DATEPART(SECOND, a.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY a.EnqueuedAt)
    FROM dbo.NotificationAttempt AS a
    WHERE a.Outcome IS NULL AND a.AttemptNum = 1 AND a.LockedBy = N'worker-1';
    SELECT @AttemptsAtToken = COUNT(*)
    FROM dbo.NotificationAttempt AS a
    INNER JOIN dbo.Notification AS q ON a.EnqueuedAt = q.EnqueuedAt AND a.StartedAt = q.UpdatedAt;
    SELECT @Leases = COUNT(*)
    FROM dbo.Notification AS q
    WHERE q.[Status] = 'Processing' AND q.LeaseUntil = DATEADD(SECOND, 300, q.StartedAt);
    EXEC tSQLt.AssertEqualsString @Expected = '1,2,3', @Actual = @Held, @Message = N'items worker-1 holds';
    EXEC tSQLt.AssertEqualsString @Expected = '4,5', @Actual = @StillPending, @Message = N'items left Pending';
    EXEC tSQLt.AssertEqualsString @Expected = '1,2,3', @Actual = @OpenAttempts, @Message = N'open attempts';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @AttemptsAtToken, @Message = N'attempts starting at the new tokens';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Leases, @Message = N'leases of 300 s';
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx claims the most urgent due items and no more than BatchSize when more are due]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Held VARCHAR(400);
    DECLARE @StillPending VARCHAR(400);
    DECLARE @Leased INT;
    DECLARE @OpenAttempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    -- Due: 1, 2 and 4 (Priority 0), 3 (Priority 1); 5 (Priority 9) is not due yet.
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:02';
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:03', @Priority = 1;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:04';
    EXEC Next_Notification_Batch_trxTests.AddItem
        @EnqueuedAt = '2024-01-01T00:00:05', @ScheduledFor = @Later, @Priority = 9;

    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 2;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transaction must be committed';
    SELECT
        @Held = STRING_AGG(CAST(DATEPART(SECOND, q.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY q.EnqueuedAt)
    FROM dbo.Notification AS q
    WHERE q.[Status] = 'Processing';
    SELECT
        @StillPending = STRING_AGG(CAST(DATEPART(SECOND, q.EnqueuedAt) AS VARCHAR(2)), ',')
        WITHIN GROUP (ORDER BY q.EnqueuedAt)
    FROM dbo.Notification AS q
    WHERE q.[Status] = 'Pending' AND q.AttemptNum = 0;
    SELECT @Leased = COUNT(*)
    FROM dbo.Notification AS q
    WHERE
        q.[Status] = 'Processing'
        AND q.LockedBy = N'worker-1'
        AND q.AttemptNum = 1
        AND q.LeaseUntil = DATEADD(SECOND, 300, q.StartedAt);
    SELECT @OpenAttempts = COUNT(*)
    FROM dbo.NotificationAttempt AS a
    WHERE a.Outcome IS NULL AND a.LockedBy = N'worker-1';
    EXEC tSQLt.AssertEqualsString
        @Expected = '1,3', @Actual = @Held, @Message = N'the two most urgent due: Priority first, then the key';
    EXEC tSQLt.AssertEqualsString
        @Expected = '2,4,5', @Actual = @StillPending, @Message = N'the others, the one not due included';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Leased, @Message = N'items held by worker-1 under a lease';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @OpenAttempts, @Message = N'open attempts';
END;
GO
-- A worker reads per row the key, the token to report with, the lease to renew
-- before, and the attempt number. The metadata comes from SQL Server's analysis of the
-- procedure, without running it.
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
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 735707 and claims nothing when WaitMs is out of range]
AS
BEGIN
    DECLARE @Status VARCHAR(20);
    DECLARE @Attempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    EXEC Next_Notification_Batch_trxTests.AssertWaitMsRefused @WaitMs = -1, @Case = N'@WaitMs -1';
    EXEC Next_Notification_Batch_trxTests.AssertWaitMsRefused @WaitMs = 60001, @Case = N'@WaitMs 60001';
    EXEC Next_Notification_Batch_trxTests.AssertWaitMsRefused @WaitMs = NULL, @Case = N'@WaitMs NULL';

    SELECT @Status = q.[Status]
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    SELECT @Attempts = COUNT(*) FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
-- INSERT ... EXEC runs the procedure inside the INSERT's own transaction (@@TRANCOUNT
-- is 1 in it), where a COMMIT would not commit and a ROLLBACK is refused: the _trx
-- refuses the call, and a caller reads its rows as a result set instead.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 735701 and claims nothing when its rows are captured by INSERT EXEC]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @Attempts INT;
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

    SELECT @Status = q.[Status]
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    SELECT @Attempts = COUNT(*) FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 735707 and leaves no transaction when BatchSize is out of range]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @TranCount INT;
    DECLARE @Status VARCHAR(20);
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

    SELECT @Status = q.[Status]
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
END;
GO
-- A blank or over-long @LockedBy and an unknown @Type are refused before the
-- procedure opens its transaction too (Next_Notification_utx refuses them again
-- inside it), so a CATCH that takes over at the error finds none open.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 735707 and leaves no transaction when LockedBy or Type is refused]
AS
BEGIN
    DECLARE @Case INT = 1;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @TranCount INT;
    DECLARE @LockedBy NVARCHAR(400);
    DECLARE @Type VARCHAR(400);
    DECLARE @Named NVARCHAR(20);
    DECLARE @Status VARCHAR(20);
    DECLARE @Attempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    WHILE (@Case <= 3)
        BEGIN
            SELECT
                @LockedBy = CASE @Case WHEN 1 THEN N'   ' WHEN 2 THEN REPLICATE(N'w', 129) ELSE N'worker-1' END,
                @Type = CASE @Case WHEN 3 THEN 'NoSuchType' END,
                @Named = CASE @Case WHEN 3 THEN N'%@Type%' ELSE N'%@LockedBy%' END,
                @ErrorNumber = NULL,
                @ErrorMessage = NULL;
            BEGIN TRY
                EXEC dbo.Next_Notification_Batch_trx @LockedBy = @LockedBy, @BatchSize = 5, @Type = @Type;
            END TRY
            BEGIN CATCH
                SELECT
                    @ErrorNumber = ERROR_NUMBER(),
                    @ErrorMessage = ERROR_MESSAGE();
            END CATCH;
            SET @TranCount = @@TRANCOUNT;
            IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
            EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Named;
            EXEC tSQLt.AssertLike @ExpectedPattern = @Named, @Actual = @ErrorMessage, @Message = @Named;
            EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'@@TRANCOUNT';
            SET @Case = @Case + 1;
        END;

    SELECT @Status = q.[Status]
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    SELECT @Attempts = COUNT(*) FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
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
    DECLARE @Status VARCHAR(20);
    DECLARE @StartedAt DATETIME2(7);
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Soon;

    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @WaitMs = 10000;

    SELECT
        @Status = q.[Status],
        @StartedAt = q.StartedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Processing', @Actual = @Status, @Message = N'the item came due and was claimed';
    IF @StartedAt IS NULL OR @StartedAt < @Soon
        EXEC tSQLt.Fail @Message0 = N'the claim must not come before the item is due';
END;
GO
-- Only a lower bound on the time: a loaded server may take longer, never shorter.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx waits about WaitMs and claims nothing when nothing comes due]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @ElapsedMs INT;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Unchanged INT;
    DECLARE @Attempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Later;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5, @WaitMs = 300;
    SET @ElapsedMs = DATEDIFF(MILLISECOND, @Before, SYSUTCDATETIME());
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'no transaction is left open';
    IF @ElapsedMs IS NULL OR @ElapsedMs < 250
        EXEC tSQLt.Fail
            @Message0 = N'the call must wait for work about @WaitMs (300 ms); it returned after (ms): ',
            @Message1 = @ElapsedMs;
    SET @Unchanged = (
        SELECT COUNT(*)
        FROM dbo.Notification AS q
        WHERE
            q.[Status] = 'Pending'
            AND q.AttemptNum = 0
            AND q.LockedBy IS NULL
            AND q.UpdatedAt = '2024-01-01T00:00:01'
    );
    SELECT @Attempts = COUNT(*) FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Unchanged, @Message = N'the waiting item is unchanged';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
-- Past the first second the pause doubles up to 800 ms; the last pause is cut to what is
-- left of @WaitMs, so the call still waits it out and no more than one pause longer.
-- Only a lower bound on the time: a loaded server may take longer, never shorter.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx waits out WaitMs and claims nothing when the pause has grown]
AS
BEGIN
    DECLARE @Later DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @Before DATETIME2(7);
    DECLARE @ElapsedMs INT;
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Attempts INT;
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Later;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5, @WaitMs = 2500;
    SET @ElapsedMs = DATEDIFF(MILLISECOND, @Before, SYSUTCDATETIME());
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'no transaction is left open';
    IF @ElapsedMs IS NULL OR @ElapsedMs < 2450
        EXEC tSQLt.Fail
            @Message0 = N'the call must wait for work about @WaitMs (2500 ms); it returned after (ms): ',
            @Message1 = @ElapsedMs;
    SELECT @Attempts = COUNT(*) FROM dbo.NotificationAttempt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Attempts, @Message = N'no attempt is written';
END;
GO
-- An item that comes due after the pause began to grow is still claimed within the wait.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx claims an item that comes due late in the wait when the pause has grown]
AS
BEGIN
    DECLARE @Soon DATETIME2(7) = DATEADD(MILLISECOND, 1800, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Status VARCHAR(20);
    DECLARE @StartedAt DATETIME2(7);
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01', @ScheduledFor = @Soon;

    EXEC @RetCode = dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @WaitMs = 10000;

    SELECT
        @Status = q.[Status],
        @StartedAt = q.StartedAt
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEqualsString
        @Expected = 'Processing', @Actual = @Status, @Message = N'the item came due and was claimed';
    IF @StartedAt IS NULL OR @StartedAt < @Soon
        EXEC tSQLt.Fail @Message0 = N'the claim must not come before the item is due';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Next_Notification_Batch_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Next_Notification_Batch_trxTests.[test Next_Notification_Batch_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @Status VARCHAR(20);
    EXEC Next_Notification_Batch_trxTests.FakeQueue;
    EXEC Next_Notification_Batch_trxTests.AddItem @EnqueuedAt = '2024-01-01T00:00:01';

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Next_Notification_Batch_trx @LockedBy = N'worker-1', @BatchSize = 5;
    END TRY
    BEGIN CATCH
        SET @ErrorNumber = ERROR_NUMBER();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    SELECT @Status = q.[Status]
    FROM dbo.Notification AS q
    WHERE q.EnqueuedAt = '2024-01-01T00:00:01';
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @Status, @Message = N'the due item';
END;
GO
